"""The validation scenarios, written once and run by both simulators.

A spec is a plain dict (JSON-safe, so the ns-3 side reads it in its own process):
``name``, ``seed``, ``rate_bps``, ``access_rate_bps``, ``bottleneck_delay_ms``,
``queue_pkts`` (DropTail limit, the packet in service not counted), ``loss`` (Bernoulli,
forward direction of the bottleneck), ``drop_data`` (1-based indices of the data packets
that arrive over the bottleneck to lose: a scripted drop), ``trace`` (trace the sender of flow
``trace_flow``, 0 unless given),
``warmup_s``, ``duration_s`` (measured after the warm-up), ``flows`` (``start_s``,
``rtt_ms``, ``size_pkts``: None for unlimited bulk, else full segments) and ``tcp``; a
``web`` spec (smallpipe and Linux only: ns-3 has no web application here) adds ``web``, a
smallpipe ``web`` flow group; a ``fig11`` spec (the Linux matrix only) adds ``fig11``
(``discipline``, ``fair_share_bps``) and takes its scenario from TAQ Figure 11's testbed
experiment instead of ``flows`` and ``tcp``.
"""

import random

TCP = {
    "packet_bytes": 500,  # IP length of a full data segment (MSS 448 with timestamps)
    "iw": 4,
    "min_rto_s": 1.0,
    "initial_rto_s": 1.0,
    "delayed_ack": True,
    "timestamps": True,
    "sack": True,
}

LOSS_RATES = (0.01, 0.03, 0.05, 0.1)
MANY_FLOWS = (10, 50, 100, 200)
FIG11_RATE_BPS = 1_000_000
FIG11_FAIR_SHARES_BPS = (10_000, 50_000)
"""Two of Figure 11's points at 1 Mbit/s: 100 and 20 flows."""
FIG11_DISCIPLINES = ("taq", "host_fq", "fq_codel", "droptail")
FCT_SIZES = (1, 2, 5, 10, 20, 50, 100)
# Scripted drops: data packets 20 (one loss in slow start), 60/62/64 (three in a window),
# and 95-110 (a whole flight's tail).
SCRIPTED_DROPS = [20, 60, 62, 64] + list(range(95, 111))


def base(name, seed, **kw):
    spec = {
        "name": name, "seed": seed, "rate_bps": 1e6, "access_rate_bps": 1e8, "bottleneck_delay_ms": 1.0,
        "queue_pkts": 50, "loss": 0.0, "drop_data": [], "trace": False, "warmup_s": 0.0, "duration_s": 60.0,
        "flows": [], "tcp": dict(TCP),
    }
    spec.update(kw)
    return spec


def bulk(n, seed, rtt_ms=200.0):
    rng = random.Random(seed)
    return [{"start_s": rng.uniform(0.0, 1.0), "rtt_ms": rtt_ms, "size_pkts": None} for _ in range(n)]


def scripted(sack=True, duration_s=30 * 0.2 + 10):
    """One flow, a buffer that never fills, the drops above; flow 0 traced. ``sack=False``:
    NewReno (RFC 6582) on both sides, named ``scripted-newreno``."""
    return base("scripted" if sack else "scripted-newreno", 1, queue_pkts=1000, drop_data=SCRIPTED_DROPS,
                trace=True, duration_s=duration_s, flows=[{"start_s": 0.0, "rtt_ms": 200.0, "size_pkts": None}],
                tcp=dict(TCP, sack=sack))


def bernoulli(p, seed, duration_s):
    """One bulk flow over Bernoulli loss p; the buffer never fills."""
    return base(f"bernoulli p={p} seed={seed}", seed, queue_pkts=1000, loss=p, warmup_s=10.0,
                duration_s=duration_s, flows=[{"start_s": 0.0, "rtt_ms": 200.0, "size_pkts": None}])


def many(n, seed, warmup_s=10.0, duration_s=200.0):
    """N bulk flows on 1 Mbit/s, 200 ms RTT, 50-packet DropTail."""
    return base(f"many N={n} seed={seed}", seed, warmup_s=warmup_s, duration_s=duration_s, flows=bulk(n, seed))


def web(seed, warmup_s=10.0, duration_s=300.0):
    """A web-pool workload on the many-flows link: 10 users fetching pages of 4 SURGE-sized
    objects over at most 4 parallel connections each, 2 s of thought between pages, 200 ms RTT."""
    return base(f"web seed={seed}", seed, warmup_s=warmup_s, duration_s=duration_s,
                web={"app": "web", "count": 10, "rtt_ms": 200.0, "start_s": [0.0, 1.0], "size": {"dist": "surge"},
                     "objects_per_page": 4, "connections": 4, "think_s": 2.0})


def fct(seed, reps, background=20, gap_s=1.5, warmup_s=10.0):
    """Transfers of each size in FCT_SIZES, ``reps`` of each in a shuffled order, one every
    ``gap_s`` after the warm-up, each on its own host pair, among ``background`` bulk flows."""
    rng = random.Random(1000 + seed)
    sizes = [s for s in FCT_SIZES for _ in range(reps)]
    rng.shuffle(sizes)
    transfers = [{"start_s": warmup_s + gap_s * i, "rtt_ms": 200.0, "size_pkts": s} for i, s in enumerate(sizes)]
    # Room for the last (possibly largest) transfer to finish.
    duration_s = gap_s * len(sizes) + 60.0
    return base(f"fct seed={seed}", seed, warmup_s=warmup_s, duration_s=duration_s,
                flows=bulk(background, seed) + transfers)


def fig11(discipline, fair_share_bps, seed, duration_s):
    """A point of TAQ Figure 11 at 1 Mbit/s: N = rate / fair share bulk flows on the Figure 2/8
    dumbbell under ``discipline`` (smallpipe.experiments.taq_testbed_fig11.point_scenario builds
    it); measured from the start, its 20 s Jain index from the second slice on."""
    return base(f"fig11 {discipline} share={fair_share_bps / 1e3:g}k seed={seed}", seed, rate_bps=FIG11_RATE_BPS,
                duration_s=duration_s, fig11={"discipline": discipline, "fair_share_bps": fair_share_bps})
