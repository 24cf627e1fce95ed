"""Matta & Guo, Section 2: the predicted (in)stability of aggregate and individual PID
control, in a packet-level simulation.

What the paper means. Its Eqs. (1)-(7) are not a router mechanism: they abstract the
senders' window control ("we do not model TCP flows ... rather we assume PID control") to
compare flows reacting to a shared queue (aggregate control, one FIFO) with flows reacting
to their own class's queue (individual control, each class on its own path or CBQ class,
as Figure 1 isolates short and long flows). The stability conditions are Eq. (2),
``α + 2β < 4/N`` for ``N`` flows sharing a queue, and Eq. (6), ``α_i + 2β_i < 4`` for a
flow or class alone. So the experiment puts PID senders, not TCP, on packet-level FIFO
links; the simulator's TCP has no such sender.

The packet level. A step is one control interval. During step ``k`` flow ``i`` sends
``w_i^k`` packets (whole packets: the fraction is carried to the next step), paced evenly
over the step; a path serves one packet per ``1/C`` of a step from a FIFO of ``limit_pkts``
packets and drops arrivals that find it full. At each step boundary every flow reads the
number of packets outstanding on its path (queued or in service, ``q^k``) and updates its
window by Eq. (1) (Eq. (5) under isolation, the class's queue and target). Where Eq. (1)
has none, the packet level has three bounds: a window is never negative, the queue never
below 0 (the link idles) nor above the buffer (it drops). A flow or class the model calls
unstable therefore does not diverge: its error grows by the spectral radius per step until
the queue hits one of these bounds, and it stays in a large oscillation (a limit cycle);
a stable one settles at ``q = B``, ``Σw = C`` with only the rounding of windows to whole
packets left.

Under isolation a class of ``n`` flows with gains ``α, β`` all reacting to the class's
queue is Eq. (1) with ``N = n`` inside the class: its condition is ``n(α + 2β) < 4``
(Eq. (6) for the class's summed gains).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import polars as pl

from smallpipe.experiments.provenance import write_csv
from smallpipe.models import matta_guo

__all__ = ["CASES", "Case", "FlowClass", "Trace", "plot", "reproduce", "run", "simulate_control", "summary"]

STEP_TICKS = 1_000_000_000
"""Integer time within a step, so that pacing and service are exact."""


@dataclass(frozen=True)
class FlowClass:
    """``flows`` PID senders with gains ``alpha``, ``beta``; under isolation the class has its
    own path serving ``service_pkts`` per step, with target ``target_pkts`` and a buffer of
    ``limit_pkts``."""

    name: str
    flows: int
    alpha: float
    beta: float
    service_pkts: int
    target_pkts: float
    limit_pkts: int


class _Fifo:
    """A tail-drop FIFO served at ``service_pkts`` per step: the departure times of the
    packets in it (queued or in service)."""

    def __init__(self, service_pkts: int, limit_pkts: int) -> None:
        if service_pkts < 1 or STEP_TICKS % service_pkts:
            raise ValueError(f"service_pkts={service_pkts}: expected a divisor of {STEP_TICKS} (whole ticks per packet)")
        if limit_pkts < 1:
            raise ValueError(f"limit_pkts={limit_pkts}: expected at least 1")
        self.service_ticks = STEP_TICKS // service_pkts
        self.limit_pkts = limit_pkts
        self.departures: deque[int] = deque()
        self.last_departure = 0
        self.served = 0
        self.dropped = 0

    def backlog(self, now: int) -> int:
        while self.departures and self.departures[0] <= now:
            self.departures.popleft()
            self.served += 1
        return len(self.departures)

    def arrive(self, now: int) -> None:
        if self.backlog(now) >= self.limit_pkts:
            self.dropped += 1
            return
        self.last_departure = max(now, self.last_departure) + self.service_ticks
        self.departures.append(self.last_departure)


@dataclass(frozen=True)
class Trace:
    """Per path ``p`` and step ``k``: the outstanding packets ``q[k, p]`` read at the step's
    start, packets sent ``sent[k, p]`` and served ``served[k, p]`` during the step, and per
    path its drops over the run."""

    q: np.ndarray
    sent: np.ndarray
    served: np.ndarray
    dropped: np.ndarray


def simulate_control(classes: Sequence[FlowClass], *, isolated: bool, steps: int,
                     w0_pkts: Sequence[float] | None = None) -> Trace:
    """Run the PID senders of ``classes`` for ``steps`` steps, sharing one path (aggregate
    control: the classes' service, targets and buffers added up) or each class on its own
    (``isolated``). Windows start at ``w0_pkts`` (one per flow; default 1), queues empty.

    Raises:
        ValueError: no class, a class without flows, ``steps`` below 2, a wrong ``w0_pkts``
            or a service rate that is not a whole number of ticks per packet.
    """
    if not classes or any(c.flows < 1 for c in classes):
        raise ValueError(f"classes={classes!r}: expected at least one class, each with at least 1 flow")
    if steps < 2:
        raise ValueError(f"steps={steps}: expected at least 2")
    path_of_class = list(range(len(classes))) if isolated else [0] * len(classes)
    if isolated:
        paths = [_Fifo(c.service_pkts, c.limit_pkts) for c in classes]
        targets = [c.target_pkts for c in classes]
    else:
        paths = [_Fifo(sum(c.service_pkts for c in classes), sum(c.limit_pkts for c in classes))]
        targets = [sum(c.target_pkts for c in classes)]
    path = np.array([path_of_class[i] for i, c in enumerate(classes) for _ in range(c.flows)])
    alpha = np.array([c.alpha for c in classes for _ in range(c.flows)])
    beta = np.array([c.beta for c in classes for _ in range(c.flows)])
    flows = path.shape[0]
    w = np.ones(flows) if w0_pkts is None else np.asarray(w0_pkts, dtype=float)
    if w.shape != (flows,) or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"w0_pkts={w0_pkts!r}: expected {flows} finite windows ≥ 0 (one per flow)")
    target = np.array(targets)[path]
    # Each class's carries spread evenly over [0, 1): equal windows then round like one
    # sender (Hermite's identity), the class's total within a packet of its summed window.
    carry = np.array([j / c.flows for c in classes for j in range(c.flows)])
    q = np.zeros((steps, len(paths)))
    sent = np.zeros((steps, len(paths)))
    served = np.zeros((steps, len(paths)))
    q_prev = np.zeros(flows)
    for k in range(steps):
        start = k * STEP_TICKS
        q[k] = [p.backlog(start) for p in paths]
        q_flow = q[k][path]
        if k > 0:  # Eq. (1) / (5); a window cannot go below zero
            w = np.maximum(w + alpha * (target - q_flow) + beta * ((target - q_flow) - (target - q_prev)), 0.0)
        q_prev = q_flow
        whole = np.floor(w + carry)
        carry = w + carry - whole
        arrivals = sorted(
            (start + (j * STEP_TICKS) // int(n), f)  # paced evenly over the step
            for f, n in enumerate(whole) for j in range(int(n))
        )
        served_before = [p.served for p in paths]
        for now, f in arrivals:
            paths[path[f]].arrive(now)
        for i, p in enumerate(paths):
            p.backlog(start + STEP_TICKS)
            served[k, i] = p.served - served_before[i]
        np.add.at(sent[k], path, whole)
    return Trace(q, sent, served, np.array([p.dropped for p in paths]))


def _class_gains(classes: Sequence[FlowClass]) -> tuple[list[float], list[float]]:
    return ([c.alpha for c in classes for _ in range(c.flows)], [c.beta for c in classes for _ in range(c.flows)])


def _oscillation(q: np.ndarray) -> tuple[float, float | None]:
    """Half the peak-to-peak of ``q`` and its mean period in steps (between upward crossings
    of its mean; None with fewer than two)."""
    centred = q - q.mean()
    up = np.flatnonzero((centred[:-1] < 0) & (centred[1:] >= 0))
    period = float(np.diff(up).mean()) if up.size >= 2 else None
    return float(q.max() - q.min()) / 2, period


def _predicted_period(alpha: Sequence[float], beta: Sequence[float]) -> float | None:
    """``2π / arg λ`` of the dominant root (2 steps for a negative real root); None for a
    positive real root (no oscillation)."""
    roots = matta_guo.aggregate_eigenvalues(alpha, beta)
    angle = abs(float(np.angle(roots[np.argmax(np.abs(roots))])))
    return 2 * math.pi / angle if angle > 1e-12 else None


@dataclass(frozen=True)
class Case:
    """A named set of classes, run shared and (with more than one class) isolated."""

    name: str
    classes: tuple[FlowClass, ...]


def _equal_gains(margin: float, flows: int = 10, beta: float = 0.05) -> Case:
    """``flows`` equal flows with ``(α + 2β)·N/4 = margin``: Eq. (2) holds below 1."""
    alpha = 4 * margin / flows - 2 * beta
    return Case(f"equal-{margin:g}", (FlowClass("all", flows, alpha, beta, 20, 40.0, 100),))


LONG = FlowClass("long", 8, 0.05, 0.02, 10, 20.0, 50)
"""Cautious senders (congestion avoidance): 8 × (α + 2β) = 0.72, stable alone."""
SHORT_AGGRESSIVE = FlowClass("short", 8, 0.4, 0.1, 10, 20.0, 50)
"""Slow-start-like senders: 8 × (α + 2β) = 4.8 > 4, unstable alone."""
SHORT_MILD = FlowClass("short", 8, 0.25, 0.1, 10, 20.0, 50)
"""8 × (α + 2β) = 3.6 < 4: stable alone, but with LONG on one queue 0.72 + 3.6 > 4."""

MARGINS = (0.5, 0.8, 0.95, 1.05, 1.2, 1.5)
CASES: tuple[Case, ...] = (
    *(_equal_gains(m) for m in MARGINS),
    Case("long+short-aggressive", (LONG, SHORT_AGGRESSIVE)),
    Case("long+short-mild", (LONG, SHORT_MILD)),
)
"""Ten equal flows on both sides of Eq. (2) (``β = 0.05``, ``C = 20``, ``B = 40``, a 100-packet
buffer), and a long and a short class sharing one queue or isolated on two half paths."""
QUICK_MARGINS = (0.8, 1.2)
SHOWN_STEPS = 120
"""The traces drawn: the transient and the first settled steps."""


def run(cases: Sequence[Case] = CASES, *, steps: int = 400) -> tuple[pl.DataFrame, dict[str, np.ndarray]]:
    """One row per case, control and path (a class under isolation, ``all`` when shared):
    the model's prediction and the packet-level oscillation over the second half of the
    run; and each run's queue trace, keyed ``case/control``."""
    rows, traces = [], {}
    for case in cases:
        for isolated in (False, True) if len(case.classes) > 1 else (False,):
            trace = simulate_control(case.classes, isolated=isolated, steps=steps)
            control = "isolated" if isolated else "aggregate"
            traces[f"{case.name}/{control}"] = trace.q
            groups = [(c.name, (c,)) for c in case.classes] if isolated else [("all", case.classes)]
            settled = slice(steps // 2, steps)
            for p, (name, classes) in enumerate(groups):
                alpha, beta = _class_gains(classes)
                target = sum(c.target_pkts for c in classes)
                service = sum(c.service_pkts for c in classes)
                limit = sum(c.limit_pkts for c in classes)
                stable = matta_guo.aggregate_stable(alpha, beta)
                carries = len(classes)  # each class rounds like one sender (see simulate_control)
                amplitude, period = _oscillation(trace.q[settled, p])
                rows.append({
                    "case": case.name, "control": control, "path": name, "flows": len(alpha),
                    "alpha": classes[0].alpha if len(classes) == 1 else None,
                    "beta": classes[0].beta if len(classes) == 1 else None,
                    "alpha_plus_2beta_sum": sum(alpha) + 2 * sum(beta),
                    "model_stable": stable,
                    "model_spectral_radius": float(np.max(np.abs(matta_guo.aggregate_eigenvalues(alpha, beta)))),
                    "model_period_steps": _predicted_period(alpha, beta),
                    "target_pkts": target, "service_pkts": service, "limit_pkts": limit,
                    # Stable: only the rounding, through the loop (rounding_gain). Unstable: the
                    # error grows until a bound acts, the window floor (q falls by C in a step),
                    # the empty queue (B below target) or the full buffer (L − B above).
                    "model_amplitude_at_most_pkts":
                        carries * matta_guo.rounding_gain(alpha, beta) / 2 if stable else None,
                    "model_amplitude_at_least_pkts":
                        None if stable else (min(service, target, limit - target) - carries) / 2,
                    "amplitude_pkts": amplitude, "period_steps": period,
                    "mean_queue_pkts": float(trace.q[settled, p].mean()),
                    "throughput_per_service": float(trace.served[settled, p].mean()) / service,
                    "idle_steps": int((trace.served[settled, p] < service).sum()),
                    "dropped_pkts": int(trace.dropped[p]),
                })
    return pl.DataFrame(rows), traces


def summary(table: pl.DataFrame) -> pl.DataFrame:
    """``agrees``: the packet-level amplitude is within the model's bound for its side of
    the stability condition."""
    return table.with_columns(agrees=pl.when(pl.col("model_stable"))
                              .then(pl.col("amplitude_pkts") <= pl.col("model_amplitude_at_most_pkts"))
                              .otherwise(pl.col("amplitude_pkts") >= pl.col("model_amplitude_at_least_pkts")))


def plot(table: pl.DataFrame, traces: dict[str, np.ndarray], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (sweep, equal, mixed) = plt.subplots(1, 3, figsize=(15, 4.2))
    equal_rows = table.filter(pl.col("case").str.starts_with("equal-")).sort("alpha_plus_2beta_sum")
    margin = equal_rows["alpha_plus_2beta_sum"].to_numpy() / 4  # (α + 2β)·N/4
    sweep.plot(margin, equal_rows["amplitude_pkts"], marker="o", label="packet level: amplitude (packets)")
    sweep.axvline(1.0, color="grey", linestyle=":", label="Eq. (2): α + 2β = 4/N")
    radius = sweep.twinx()
    radius.plot(margin, equal_rows["model_spectral_radius"], marker="s", color="black", linestyle="--",
                label="model: spectral radius")
    radius.set_ylabel("model spectral radius")
    sweep.set_xlabel("(α + 2β)·N / 4   (N = 10, β = 0.05)")
    sweep.set_ylabel("queue amplitude after the transient (packets)")
    sweep.legend(fontsize=7, loc="upper left")
    radius.legend(fontsize=7, loc="lower right")
    shown = slice(0, SHOWN_STEPS)
    for m in sorted(QUICK_MARGINS, reverse=True):  # the stable trace on top
        equal.plot(traces[f"equal-{m:g}/aggregate"][shown, 0], label=f"(α + 2β)N/4 = {m:g}")
    equal.axhline(40, color="grey", linestyle=":", label="target B")
    equal.set_title("10 equal flows, one queue", fontsize=9)
    for ax in (equal, mixed):
        ax.set_xlabel("step")
        ax.set_ylabel("outstanding packets")
    equal.legend(fontsize=7)
    shared = traces.get("long+short-mild/aggregate")
    if shared is not None:
        mixed.plot(shared[shown, 0], label="shared queue (long + short), target 40")
        isolated = traces["long+short-mild/isolated"]
        mixed.plot(isolated[shown, 0], label="isolated long class, target 20")
        mixed.plot(isolated[shown, 1], label="isolated short class, target 20")
    mixed.set_title("long (Σ = 0.72) and short (Σ = 3.6) flows", fontsize=9)
    mixed.legend(fontsize=7)
    fig.suptitle("Matta & Guo §2: PID senders on packet-level FIFOs")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def reproduce(out: Path, *, quick: bool = False, seed: int = 1) -> pl.DataFrame:
    """Every case over 400 steps (``quick``: the two margins of :data:`QUICK_MARGINS` and the
    mixed cases over 200), written as CSV and PNG. Deterministic: ``seed`` is not used."""
    del seed
    cases = [c for c in CASES if not c.name.startswith("equal-") or float(c.name[6:]) in QUICK_MARGINS] if quick else CASES
    table, traces = run(cases, steps=200 if quick else 400)
    table = summary(table)
    write_csv(table, out / "isolation-matta-guo.csv")
    plot(table, traces, out / "isolation-matta-guo.png")
    return table
