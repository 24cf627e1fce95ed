"""Scenarios built in code for the papers' standard set-ups."""

from __future__ import annotations

from typing import Any

from smallpipe.scenario import Scenario

__all__ = ["NS2_TCP", "taq_dumbbell"]

TAQ_PACKET_SIZE_BYTES = 500
"""On-the-wire packet size of the TAQ paper's simulations (Section 2.3)."""

TAQ_RTT_MS = 200.0
"""Propagation RTT of the TAQ paper's dumbbell."""

NS2_TCP: dict[str, Any] = {
    "packet_size_bytes": TAQ_PACKET_SIZE_BYTES,
    "recovery": "newreno",
    "delayed_ack": False,
    "timestamps": False,
    "initial_window_pkts": 2,
    "min_rto_ms": 200.0,
}
"""The TAQ paper's ns-2 TCP as we read it: ns-2's defaults of the time (NewReno, no
timestamps, IW 2, minimum RTO 200 ms), 500-byte packets, no delayed ACKs (Section 2.3)."""


def taq_dumbbell(
    *,
    flows: int,
    rate_bps: int,
    duration_s: float,
    seed: int = 1,
    slice_s: float = 20.0,
    queue: dict[str, Any] | None = None,
    buffer_pkts: int | None = None,
    packet_size_bytes: int = TAQ_PACKET_SIZE_BYTES,
) -> Scenario:
    """The TAQ paper's Figure 2 set-up: bulk NewReno flows over a dumbbell.

    ``flows`` long-lived flows start uniformly in the first second, with a 200 ms
    propagation RTT and 500-byte packets, no delayed ACKs; the bottleneck has a
    1 ms delay and a buffer of one RTT's worth of packets,
    ``rate_bps · 0.2 s / (packet_size_bytes · 8 bit)``, unless ``buffer_pkts`` is given.
    ``queue`` picks the discipline (a ``[link.queue]`` table without ``limit_pkts``,
    which the buffer fills in, per class for ``class_isolation``); DropTail by default. Slices are 20 s as in the paper, or
    the whole run when it is shorter.

    The paper ran ns-2 and names no TCP knobs beyond these; we take ns-2's defaults of
    the time (documented in docs/reproductions/taq.md): NewReno, no timestamps (so 460
    payload bytes per 500-byte packet), initial window 2, minimum RTO 200 ms.
    """
    if buffer_pkts is None:
        buffer_pkts = max(1, round(rate_bps * TAQ_RTT_MS / 1e3 / (packet_size_bytes * 8)))
    discipline: dict[str, Any] = {"kind": "droptail", **(queue or {})}
    if discipline["kind"] == "class_isolation":
        # Two classes with buffers of their own: each gets the buffer.
        for name in ("short", "long"):
            cls = discipline.setdefault(name, {})
            cls["queue"] = {"kind": "droptail", **cls.get("queue", {}), "limit_pkts": buffer_pkts}
    else:
        discipline["limit_pkts"] = buffer_pkts
    return Scenario(
        seed=seed,
        duration_s=duration_s,
        slice_s=min(slice_s, duration_s),
        link={
            "rate_bps": rate_bps,
            "delay_ms": 1.0,
            "queue": discipline,
        },
        tcp={**NS2_TCP, "packet_size_bytes": packet_size_bytes},
        flows=[{"count": flows, "app": "bulk", "rtt_ms": TAQ_RTT_MS, "start_s": [0.0, 1.0]}],
    )


def bench_dumbbell(*, flows: int, rate_bps: int, duration_s: float, queue: str = "droptail",
                   fifo_hops: str = "events") -> Scenario:
    """The scenario `smallpipe bench` times and `benches/compare_ns3.sh` runs against ns-3:
    the TAQ Figure 2 dumbbell with the discipline ``queue`` (its defaults) and the given
    ``fifo_hops``. One definition, so that the benchmarks that compare with it time the same run."""
    scenario = taq_dumbbell(flows=flows, rate_bps=rate_bps, duration_s=duration_s, queue={"kind": queue})
    return scenario.with_overrides({"fifo_hops": fifo_hops})
