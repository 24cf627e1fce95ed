"""Shared set-up of the Matta & Guo reproductions (``papers/class-isolation-short-long-flows.md``):
the Table 2 dumbbell of sessions of 1000- and 10-packet connections with telnet background,
under sharing (one DropTail queue) or isolation (class-based queueing, short class on its
own pipe), and the per-class metrics of Section 3.2 (Jain index and goodput over 20 s
intervals, averaged).

Our reading of the paper's ns-2 TCP-reno (Table 2 and footnote 5): 576-byte packets,
no timestamps (536-byte MSS), a 128-packet maximum window (the receiver window), Reno
recovery, initial window 1 and no delayed ACKs (footnote 5: a 10-packet connection sends
1, 2, 4, 3 packets), 0.5 s timer granularity with a 1 s minimum RTO (two ticks).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from smallpipe import metrics
from smallpipe.result import Result

__all__ = [
    "B_U_PKTS",
    "C_U_BPS",
    "LONG_PKTS",
    "MATTA_TCP",
    "MSS_BYTES",
    "PACKET_BYTES",
    "SCHEMES",
    "SHORT_PKTS",
    "class_metrics",
    "measure",
    "pipe_scenario",
    "plot_against",
    "run_pipe_sizes",
]

PACKET_BYTES = 576
MSS_BYTES = PACKET_BYTES - 40
C_U_BPS = 2_500_000
"""Capacity unit: 2.5 Mbit/s = 542 packets/s of 576 bytes."""
B_U_PKTS = 50
"""Buffer unit: about C_u × RTT."""
LONG_PKTS = 1000
SHORT_PKTS = 10
SHORT_DSCP = 10

MATTA_TCP: dict[str, Any] = {
    "packet_size_bytes": PACKET_BYTES,
    "recovery": "reno",
    "initial_window_pkts": 1,
    "delayed_ack": False,
    "timestamps": False,
    "rwnd_bytes": 128 * MSS_BYTES,
    "min_rto_ms": 1000.0,
    "clock_granularity_ms": 500.0,
}


def pipe_scenario(
    *,
    sessions: int,
    short_capacity_units: float,
    long_capacity_units: float,
    short_buffer_units: float,
    long_buffer_units: float,
    scheme: str,
    duration_s: float,
    seed: int,
) -> dict[str, Any]:
    """Figure 2's dumbbell. ``sessions`` sessions of long connections and as many of short
    ones start uniformly in the first 5 s; 40 ms bottleneck, 5 ms access links (100 ms RTT),
    access links at 4 C_u, six telnet sessions (three per class under isolation).

    ``scheme``:

    - ``isolation``: class-based queueing with the short class's weight and buffer
      ``short_*_units`` and the long class's ``long_*_units`` (weights are the capacity
      units; work-conserving: an idle class lends its share);
    - ``pipes``: two separate pipes, the diamond with size routing, path 1 of
      ``short_capacity_units`` C_u with the short buffer and path 2 of ``long_capacity_units``
      C_u with the long buffer (not work-conserving; ACKs share the reverse of path 1);
    - ``sharing``: one DropTail queue with the summed capacity and buffer.

    In all three the edge marks connections of at most 100 packets short (a size oracle),
    which only ``isolation`` and ``pipes`` read.
    """
    capacity_bps = round((short_capacity_units + long_capacity_units) * C_U_BPS)
    short_buf = max(1, round(short_buffer_units * B_U_PKTS))
    long_buf = max(1, round(long_buffer_units * B_U_PKTS))
    topology: dict[str, Any] = {"kind": "dumbbell"}
    if scheme == "isolation":
        # Weights in units of 1/10 C_u so fractional pipe sizes stay exact.
        queue: dict[str, Any] = {
            "kind": "class_isolation",
            "classify": "dscp",
            "short_dscp": SHORT_DSCP,
            "quantum_bytes": PACKET_BYTES,
            "short": {"weight": round(10 * short_capacity_units),
                      "queue": {"kind": "droptail", "limit_pkts": short_buf}},
            "long": {"weight": round(10 * long_capacity_units),
                     "queue": {"kind": "droptail", "limit_pkts": long_buf}},
        }
    elif scheme == "pipes":
        capacity_bps = round(short_capacity_units * C_U_BPS)
        queue = {"kind": "droptail", "limit_pkts": short_buf}
        topology = {"kind": "diamond", "routing": "size", "path2_rate_bps": round(long_capacity_units * C_U_BPS),
                    "path2_queue": {"kind": "droptail", "limit_pkts": long_buf}}
    elif scheme == "sharing":
        queue = {"kind": "droptail", "limit_pkts": short_buf + long_buf}
    else:
        raise ValueError(f"scheme {scheme!r}: expected isolation, pipes or sharing")
    session = {"app": "session", "count": sessions, "rtt_ms": 100.0, "start_s": [0.0, 5.0], "think_s": 0.0}
    telnet = {"app": "interactive", "count": 3, "burst_bytes": 64, "mean_gap_s": 0.5, "rtt_ms": 100.0,
              "start_s": [0.0, 5.0]}
    return {
        "seed": seed,
        "duration_s": duration_s,
        "slice_s": 20.0,
        "link": {
            "rate_bps": capacity_bps,
            "delay_ms": 40.0,
            "receiver_delay_ms": 5.0,
            "access_rate_bps": 4 * C_U_BPS,
            "queue": queue,
        },
        "tcp": MATTA_TCP,
        "edge": {"mark": "size_oracle", "threshold_bytes": 100 * MSS_BYTES, "dscp": SHORT_DSCP},
        "topology": topology,
        "flows": [
            {**session, "size_bytes": LONG_PKTS * MSS_BYTES},
            {**session, "size_bytes": SHORT_PKTS * MSS_BYTES},
            {**telnet, "dscp": SHORT_DSCP},
            {**telnet, "dscp": 0},
        ],
    }


def class_metrics(result: Result, group: int, *, warmup_s: float = 20.0) -> dict[str, float]:
    """Per-session goodput per 20 s slice for the sessions of ``group`` (connections summed
    per session, zeros included): the mean over slices of Jain's index across sessions,
    and the mean class goodput in bit/s (payload delivered in order). The slices covering
    the first ``warmup_s`` are start-up and skipped (one 20 s slice; as many as the warm-up
    spans when a variant shortens the slices). ``jain_min`` is the lowest slice's index
    (the paper's "as low as"). ``conn_jain`` is Jain's index over connections instead, each
    connection's goodput being its size over its completion time."""
    units = result.units.filter(pl.col("group") == group)["unit_id"].to_list()
    slice_s = result.meta["slice_ns"] / 1e9
    n_slices = round(result.meta["duration_ns"] / result.meta["slice_ns"])
    skip_slices = math.ceil(warmup_s / slice_s - 1e-9)
    per = (
        result.slices.join(result.flows.select("flow_id", "unit_id", "group"), on="flow_id")
        .filter(pl.col("group") == group)
        .group_by("unit_id", "slice")
        .agg(pl.col("bytes").sum())
    )
    matrix = np.zeros((n_slices, len(units)))
    col = {u: i for i, u in enumerate(units)}
    for u, s, b in per.iter_rows():
        if s < n_slices:
            matrix[s, col[u]] = b
    kept = matrix[skip_slices:]
    jains = [metrics.jain(row) for row in kept if row.sum() > 0]
    # Per connection: size over completion time of the connections that started after the
    # skipped slices and finished (the other reading of the paper's "goodput achieved by
    # connection i").
    done = result.flows.filter(
        (pl.col("group") == group)
        & pl.col("end_ns").is_not_null()
        & (pl.col("start_ns") >= skip_slices * result.meta["slice_ns"])
    )
    conn_goodput = (done["bytes_delivered"] * 8e9 / (done["end_ns"] - done["start_ns"])).to_numpy()
    return {
        "conn_jain": metrics.jain(conn_goodput) if conn_goodput.size else float("nan"),
        "jain": float(np.mean(jains)) if jains else float("nan"),
        "jain_min": float(np.min(jains)) if jains else float("nan"),
        "goodput_bps": float(kept.sum(axis=1).mean() * 8 / slice_s),
    }



SCHEMES: tuple[str, ...] = ("isolation", "pipes", "sharing")


def run_pipe_sizes(*, sessions: int, ks: Sequence[int], duration_s: float, seed: int) -> pl.DataFrame:
    """Section 4.2: for each long-to-short pipe ratio ``k``, isolation (short pipe C_u, B_u;
    long pipe k C_u, k B_u) and sharing (one pipe of (1 + k) C_u, (1 + k) B_u). One row per
    (k, scheme) with each class's mean per-slice Jain index and goodput, the bottleneck
    utilisation, loss rate and timeouts per connection of each class."""
    rows = []
    for k in ks:
        for scheme in SCHEMES:
            sc = pipe_scenario(sessions=sessions, short_capacity_units=1, long_capacity_units=k,
                               short_buffer_units=1, long_buffer_units=k, scheme=scheme,
                               duration_s=duration_s, seed=seed)
            rows.append({"k": k, **measure(sc, scheme)})
    return pl.DataFrame(rows)


def measure(sc: dict[str, Any], scheme: str) -> dict[str, Any]:
    """Run ``sc`` and measure it (one row; the forward links of both pipes summed)."""
    from smallpipe.result import simulate

    result = simulate(sc)
    fwd = result.links.filter(pl.col("name") != "bottleneck_reverse")
    row: dict[str, Any] = {"scheme": scheme}
    for group, name in ((0, "long"), (1, "short")):
        m = class_metrics(result, group)
        conns = result.flows.filter(pl.col("group") == group)
        row[f"{name}_jain"] = m["jain"]
        row[f"{name}_jain_min"] = m["jain_min"]
        row[f"{name}_conn_jain"] = m["conn_jain"]
        row[f"{name}_goodput_mbps"] = m["goodput_bps"] / 1e6
        row[f"{name}_timeouts_per_conn"] = float(conns.select(pl.col("timeouts").mean()).item() or 0.0)
        row[f"{name}_conns_done"] = conns.filter(pl.col("end_ns").is_not_null()).height
    duration_s = result.meta["duration_ns"] / 1e9
    tx_bits, rate_bps = 8 * int(fwd["tx_bytes"].sum()), int(fwd["rate_bps"].sum())
    row["utilization"] = tx_bits / (rate_bps * duration_s)
    row["loss_rate"] = int(fwd["dropped_pkts"].sum()) / max(1, int(fwd["arrived_pkts"].sum()))
    return row


def plot_against(table: pl.DataFrame, x: str, xlabel: str, title: str, path: Any) -> None:
    """The paper's two panels: (a) Jain index, (b) goodput, per class and scheme against ``x``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax_j, ax_g) = plt.subplots(1, 2, figsize=(10, 4))
    styles = {"isolation": ("-", "o"), "pipes": (":", "^"), "sharing": ("--", "s")}
    colors = {"short": "tab:blue", "long": "tab:red"}
    for (scheme,), group in table.sort(x).group_by("scheme", maintain_order=True):
        line, marker = styles[scheme]
        for cls, color in colors.items():
            style = {"linestyle": line, "marker": marker, "color": color, "label": f"{cls}, {scheme}"}
            ax_j.plot(group[x], group[f"{cls}_jain"], **style)
            ax_g.plot(group[x], group[f"{cls}_goodput_mbps"], **style)
    ax_j.set_xlabel(xlabel)
    ax_j.set_ylabel("Jain index (mean over 20 s slices)")
    ax_j.set_ylim(0.6, 1.01)  # zoomed: every value measured is above 0.6
    ax_j.set_title("(a) fairness index")
    ax_g.set_xlabel(xlabel)
    ax_g.set_ylabel("class goodput (Mbit/s)")
    ax_g.set_title("(b) goodput")
    for ax in (ax_j, ax_g):
        ax.legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
