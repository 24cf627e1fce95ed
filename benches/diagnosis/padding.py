#!/usr/bin/env python3
"""Diagnosis runs of docs/reproductions/padding-diversity.md, one cause at a time.

    python3 benches/diagnosis/padding.py red-diversity   # Figure 9: does RED's mode or `gentle` make diversity degrade gently?
    python3 benches/diagnosis/padding.py gain            # Figure 5(b): which ns-2 setting brings the backlogged flow's G to the model?
    python3 benches/diagnosis/padding.py copied-retransmissions  # diversity with its resends after a timeout copied too
    python3 benches/diagnosis/padding.py padding-model   # Figure 5(b): which bursts make padding slower than Eq. (12)?

Seed 1, 200 s per run as Figures 5(b) and 9's full runs (bursts of the first 20 s left out).
"""

from __future__ import annotations

import argparse
import bisect
import math

import polars as pl
from smallpipe.experiments import padding_fig5, padding_fig9
from smallpipe.experiments.padding_sim import PACKET_BYTES, response_means_s
from smallpipe.models import interactive
from smallpipe.models import padding_diversity as m
from smallpipe.result import simulate

CLIENTS = (200, 300, 400)
RED_VARIANTS = [
    ("packet mode, not gentle (Figure 9 as run)", {}),
    # In byte mode `limit_bytes` replaces `limit_pkts`: the same 40 kB buffer, counted in bytes.
    ("byte mode, not gentle", {"link.queue.mode": "bytes", "link.queue.limit_bytes": padding_fig9.BUFFER_BYTES}),
    ("byte mode, gentle (ns-2's defaults)",
     {"link.queue.mode": "bytes", "link.queue.limit_bytes": padding_fig9.BUFFER_BYTES, "link.queue.gentle": True}),
    ("packet mode, gentle", {"link.queue.gentle": True}),
]


def fig9_cell(r) -> str:
    """A Figure 9 run's mean response time (bursts written after the warm-up) and its
    bottleneck loss rate."""
    done = r.bursts.filter(pl.col("sent_ns") >= int(padding_fig9.WARMUP_S * 1e9)).drop_nulls("response_ns")
    loss = r.links.filter(pl.col("name") == "bottleneck")["loss_rate"].item()
    return f"{done['response_ns'].mean() / 1e9:.3f} s (loss {loss:.3f})"


def red_diversity(seed: int) -> None:
    """Mean response time and bottleneck loss of interactive and 2-copy diversity clients
    under Figure 9's RED with its mode and `gentle` changed."""
    for name, overrides in RED_VARIANTS:
        for n in CLIENTS:
            cells = []
            for approach in ("interactive", "diversity"):
                sc = padding_fig9.scenario(approach, "red", n, duration_s=200.0, seed=seed).with_overrides(overrides)
                cells.append(f"{approach} {fig9_cell(simulate(sc))}")
            print(f"{name}, {n} clients: " + ", ".join(cells), flush=True)


GAIN_LOSSES = padding_fig5.LOSSES
MSS_BYTES = PACKET_BYTES - 52  # 40 header bytes and 12 of timestamps
# One setting at a time, on both the interactive and the backlogged clients of Figure 5(b).
GAIN_VARIANTS = [
    ("Figure 5(b) as run: SACK, timestamps, no delayed ACKs, rwnd unlimited, minRTO 1 s, 500-byte bursts", {}),
    ("rwnd 20 segments (ns-2's window_ default)", {"tcp.rwnd_bytes": 20 * MSS_BYTES}),
    ("Reno recovery (ns-2's FullTcp)", {"tcp.recovery": "reno"}),
    ("NewReno recovery", {"tcp.recovery": "newreno"}),
    ("no timestamps", {"tcp.timestamps": False}),
    ("delayed ACKs (every second segment, 200 ms)", {"tcp.delayed_ack": True}),
    ("minRTO 200 ms", {"tcp.min_rto_ms": 200.0}),
    ("marked packet a full segment (1448-byte bursts)", {"flows.0.burst_bytes": MSS_BYTES}),
    # ns-2's defaults: FullTcp is Reno without timestamps, segsize_ 536, window_ 20,
    # segsperack_ 1 (an ACK per segment, as ours without delayed ACKs).
    ("all of ns-2 FullTcp's defaults: Reno, no timestamps, 576-byte packets, rwnd 20 segments",
     {"tcp.recovery": "reno", "tcp.timestamps": False, "tcp.packet_size_bytes": 576, "tcp.rwnd_bytes": 20 * 536}),
]


def means_s(bursts: pl.DataFrame) -> dict:
    """`response_means_s` and the mean time from a burst's first send to the first ACK
    covering it by SACK or cumulative ACK (`send_to_cover_s`, from `covered_ns`)."""
    done = bursts.filter(pl.col("sent_ns") >= int(padding_fig5.WARMUP_S * 1e9)).drop_nulls("response_ns")
    cover_ns = (done["covered_ns"] - done["first_sent_ns"]).mean()
    return response_means_s(bursts, warmup_s=padding_fig5.WARMUP_S) | {"send_to_cover_s": cover_ns / 1e9}


def model_gain(p: float, rto_s: float) -> float:
    """Eq. (3) over Eq. (10) with Brosh's Q (Eq. 7 summed, w_max = 2·E[w]) at RTT 12 ms."""
    rtt_s = padding_fig5.RTT_MS / 1e3
    w_max = max(1, round(2 * m.expected_window_pkts(p)))
    q = m.brosh_timeout_probability_uniform(p, w_max=w_max)
    return interactive.response_time_interactive(p, rto_s, rtt_s) / m.response_time_backlogged(p, q, rto_s, rtt_s)


def gain(seed: int) -> None:
    """The backlogged flow's gain G over the interactive flow of Figure 5(b) with one TCP
    setting changed at a time, on three metrics, each the same for both flows (from the
    write, from the marked packet's send to its cumulative ACK, and to the first ACK
    covering it by SACK or cumulative ACK), beside the model's G at the variant's minRTO;
    and the backlogged flows' timeouts and fast retransmits per flow and second."""
    for name, overrides in GAIN_VARIANTS:
        rto_s = overrides.get("tcp.min_rto_ms", 1000.0) / 1e3
        for p in GAIN_LOSSES:
            got, events = {}, ""
            for approach in ("interactive", "backlogged"):
                sc = padding_fig5.scenario(approach, p, flows=10, duration_s=200.0, seed=seed).with_overrides(overrides)
                r = simulate(sc)
                got[approach] = means_s(r.bursts)
                if approach == "backlogged":
                    per_s = 1 / (10 * 200.0)
                    events = (f"RTOs {r.flows['timeouts'].sum() * per_s:.3f}/s, "
                              f"fast retransmits {r.flows['fast_retransmits'].sum() * per_s:.2f}/s")
            i, b = got["interactive"], got["backlogged"]
            gains = ", ".join(f"{k} {i[k] / b[k]:.2f}" for k in ("write_to_ack_s", "send_to_ack_s", "send_to_cover_s"))
            print(f"{name}, p {p}: interactive {i['send_to_ack_s']:.4f} s, backlogged write {b['write_to_ack_s']:.4f} "
                  f"send-ack {b['send_to_ack_s']:.4f} send-cover {b['send_to_cover_s']:.4f} s ({b['bursts']} bursts); "
                  f"G {gains}; model {model_gain(p, rto_s):.2f}; {events}", flush=True)


COPIED = {"tcp.diversity_copy_retransmissions": True}


def copied_retransmissions(seed: int) -> None:
    """2-copy diversity with `diversity_copy_retransmissions` against the paper's single
    resends: Figure 5(b)'s points against Eq. (14) and against Eq. (3) at p² (every round
    fails with p^k when every round is copied), and Figure 9's RED (as run, and gentle)."""
    rtt_s, rto_s = padding_fig5.RTT_MS / 1e3, 1.0
    for p in padding_fig5.LOSSES:
        cells = []
        for name, overrides in (("single resends", {}), ("copied resends", COPIED)):
            sc = padding_fig5.scenario("diversity", p, flows=10, duration_s=200.0, seed=seed).with_overrides(overrides)
            got = response_means_s(simulate(sc).bursts, warmup_s=padding_fig5.WARMUP_S)
            cells.append(f"{name} {got['write_to_ack_s']:.4f} s")
        print(f"Figure 5(b) diversity, p {p}: " + ", ".join(cells)
              + f"; Eq. (14) {m.response_time_diversity(p, rto_s, rtt_s):.4f} s, "
              f"Eq. (3) at p^2 {interactive.response_time_interactive(p * p, rto_s, rtt_s):.4f} s", flush=True)
    for red, red_overrides in (("RED as run", {}), ("RED gentle", {"link.queue.gentle": True})):
        for n in CLIENTS:
            cells = []
            for name, overrides in (("single resends", {}), ("copied resends", COPIED)):
                sc = padding_fig9.scenario("diversity", "red", n, duration_s=200.0, seed=seed)
                cells.append(f"{name} {fig9_cell(simulate(sc.with_overrides({**red_overrides, **overrides})))}")
            print(f"Figure 9 {red}, {n} clients: " + ", ".join(cells), flush=True)


PADDING_LOSSES = padding_fig5.LOSSES
HEADER_BYTES = 52  # 40 header bytes and 12 of timestamps on every data segment
SYN = 0x02
SLOW_NS = int(1.5 * padding_fig5.RTT_MS * 1e6)  # later than this an ACK was not the first one
TIMEOUT_NS = 500_000_000  # a repair later than this after the send was the RTO (1 s), not the 12 ms fast retransmit


def _data_segments(events: pl.DataFrame) -> dict[int, list[tuple[int, int, int, bool]]]:
    """Per connection, every data segment offered to the forward bottleneck in time order:
    (time_ns, first byte relative to the ISS, payload bytes, lost on the wire)."""
    fwd = events.filter(pl.col("link") == "bottleneck", pl.col("event").is_in(["enqueue", "drop"]))
    out = {}
    for (flow,), rows in fwd.sort("time_ns").group_by("flow_id", maintain_order=True):
        iss = rows.filter(pl.col("flags") & SYN == SYN)["seq"][0]
        segs, open_at = [], {}
        for t, event, seq, length in rows.select("time_ns", "event", "seq", "len_bytes").iter_rows():
            if length <= HEADER_BYTES:
                continue
            if event == "enqueue":
                open_at[(seq, length)] = len(segs)
                segs.append((t, (seq - iss) % 2**32, length - HEADER_BYTES, False))
            else:  # the wire lost it after it left the queue
                i = open_at[(seq, length)]
                segs[i] = segs[i][:3] + (True,)
        out[flow] = segs
    return out


def _acks(events: pl.DataFrame) -> dict[int, tuple[list[int], list[int]]]:
    """Per connection, the cumulative ACKs (relative to the ISS) offered to the reverse
    bottleneck and their times, for "was every earlier byte acknowledged when this burst left"."""
    rev = events.filter(pl.col("link") == "bottleneck_reverse", pl.col("event") == "enqueue")
    fwd_iss = events.filter(pl.col("link") == "bottleneck", pl.col("flags") == SYN).select("flow_id", iss="seq")
    rev = rev.join(fwd_iss, on="flow_id").with_columns(rel=(pl.col("ack") - pl.col("iss")) % 2**32).sort("time_ns")
    return {flow: (rows["time_ns"].to_list(), rows["rel"].cum_max().to_list())
            for (flow,), rows in rev.group_by("flow_id", maintain_order=True)}


CAUSES = (
    "data arrived, ACK on time",
    "data arrived, ACK held by an earlier burst's lost dummy",
    "data arrived, slow otherwise",
    "data lost, 3 dummies arrived: fast retransmit",
    "data lost, 3 dummies arrived: timeout",
    "data lost, a dummy lost too: timeout",
    "data lost, dummies not sent on their own",
)


def classify_padding_bursts(r, dummies: int = 3, dummy_bytes: int = 20) -> pl.DataFrame:
    """One row per burst written after the warm-up and acknowledged: its cause (`CAUSES`),
    response time, time from its write to its first cover by SACK or ACK (`cover_ns`),
    whether an earlier byte was still unacknowledged when it left (`hole_at_send`), the time from its first send to the data's first retransmission
    (`repair_ns`, null if none), how many of its data's retransmissions the wire lost, and
    for a burst sent behind a hole the time to that hole's first resend after the burst's
    send and whether the wire lost it (`hole_repair_ns`, `hole_repair_lost`)."""
    segs, acks = _data_segments(r.events), _acks(r.events)
    burst_bytes = padding_fig5.BURST_BYTES
    stride = burst_bytes + dummies * dummy_bytes
    rows = []
    for (flow,), bursts in r.bursts.sort("sent_ns").group_by("flow_id", maintain_order=True):
        ack_t, ack_rel = acks[flow]
        for k, b in enumerate(bursts.iter_rows(named=True)):
            if b["sent_ns"] < padding_fig5.WARMUP_S * 1e9 or b["acked_ns"] is None:
                continue
            start = 1 + k * stride
            data = [s for s in segs[flow] if s[1] <= start < s[1] + s[2]]
            # A dummy counts when it left on its own (not merged into the data's segment).
            pads = [next((s for s in segs[flow] if s[1] <= d < s[1] + s[2]), None)
                    for d in range(start + burst_bytes, start + stride, dummy_bytes)]
            merged = any(s is None or s[1] <= start for s in pads)
            arrived = sum(not s[3] and (len(data) < 2 or s[0] < data[1][0]) for s in pads if not merged)
            first_ns = data[0][0]
            i = bisect.bisect_right(ack_t, first_ns) - 1
            hole = i < 0 or ack_rel[i] < start
            # The oldest unacknowledged byte when the burst left, and its first resend after that.
            hole_tx = [] if not hole or i < 0 else [
                s for s in segs[flow] if s[1] <= ack_rel[i] < s[1] + s[2] and s[0] > first_ns]
            repair_ns = data[1][0] - first_ns if len(data) > 1 else None
            if not data[0][3]:
                if b["acked_ns"] - b["first_sent_ns"] <= SLOW_NS:
                    cause = CAUSES[0]
                elif b["covered_ns"] - b["first_sent_ns"] <= SLOW_NS and hole:
                    cause = CAUSES[1]
                else:
                    cause = CAUSES[2]
            elif merged:
                cause = CAUSES[6]
            elif arrived == dummies:
                cause = CAUSES[3] if repair_ns < TIMEOUT_NS else CAUSES[4]
            else:
                cause = CAUSES[5]
            rows.append({"flow_id": flow, "cause": cause, "response_ns": b["response_ns"],
                         "cover_ns": b["covered_ns"] - b["sent_ns"], "hole_at_send": hole,
                         "repair_ns": repair_ns, "retransmissions_lost": sum(s[3] for s in data[1:]),
                         "hole_repair_ns": hole_tx[0][0] - first_ns if hole_tx else None,
                         "hole_repair_lost": hole_tx[0][3] if hole_tx else None})
    return pl.DataFrame(rows)


def padding_tree(p: float, rto_s: float, rtt_s: float) -> dict[str, tuple[float, float]]:
    """Eq. (12)'s tree by branch: (probability, contribution to E[L′] in s). Data arrives:
    one RTT; data lost and the m − 1 = 3 dummies arrive (1 − Q): a fast retransmit, one more
    RTT, and if the wire loses it a timeout chain (each RTO doubled, p/(1−2p)·RTO); data lost
    and a dummy lost (Q): a timeout chain from the first RTO, RTO/(1−2p), then one RTT. The
    contributions add up to Eq. (12)."""
    q = m.padding_timeout_probability(p)
    chain_s = rto_s / (1.0 - 2.0 * p)
    return {CAUSES[0]: (1.0 - p, (1.0 - p) * rtt_s),
            CAUSES[3]: (p * (1.0 - q), p * (1.0 - q) * (2.0 * rtt_s + p * chain_s)),
            CAUSES[5]: (p * q, p * q * (rtt_s + chain_s))}


def hole_at_send_share(p: float, rto_s: float, rtt_s: float, mean_gap_s: float = 1.0) -> float:
    """First-order share of bursts sent while an earlier burst's dummy is still a hole: the
    earlier burst's data arrived (1 − p), one of its three dummies was lost (1 − (1 − p)³;
    none of them has three segments behind it, so only a timeout or the next burst repairs
    it), and the next write, an exponential gap after that burst's ACK one RTT after the
    send, comes before the dummy's RTO fires: 1 − exp(−(RTO − RTT)/gap)."""
    return (1.0 - p) * (1.0 - (1.0 - p) ** 3) * (1.0 - math.exp(-(rto_s - rtt_s) / mean_gap_s))


def padding_model(seed: int) -> None:
    """Figure 5(b)'s padding clients (10 for 200 s, bursts after 20 s) with every packet
    traced: each burst's cause of delay against Eq. (12)'s branch, as share of the bursts and
    contribution to the mean response time; then the mean timed to the first ACK that
    covers the burst by SACK, which no earlier hole holds back."""
    rtt_s, rto_s = padding_fig5.RTT_MS / 1e3, padding_fig5.RTO_S
    for p in PADDING_LOSSES:
        sc = padding_fig5.scenario("padding", p, flows=10, duration_s=200.0, seed=seed)
        r = simulate(sc.with_overrides({"trace.events": True, "trace.max_rows": 10_000_000}))
        assert not r.meta.get("trace_truncated"), "the event trace hit its cap"
        t = classify_padding_bursts(r)
        n, tree = t.height, padding_tree(p, rto_s, rtt_s)
        sim_s, model = t["response_ns"].mean() / 1e9, m.response_time_padding(p, rto_s, rtt_s)
        print(f"p {p}: {n} bursts, mean {sim_s:.4f} s, Eq. (12) {model:.4f} s, sim/model {sim_s / model:.2f}")
        for cause in CAUSES:
            c = t.filter(pl.col("cause") == cause)
            share, contrib = c.height / n, c["response_ns"].sum() / n / 1e9
            q_share, q_contrib = tree.get(cause, (0.0, 0.0))
            extra = ""
            if cause in CAUSES[3:] and c.height:
                extra = (f"; first repair after {c['repair_ns'].median() / 1e6:.0f} ms (median), "
                         f"{c['retransmissions_lost'].sum()} retransmissions lost")
            print(f"  {cause}: {c.height} ({share:.4f}, model {q_share:.4f}), "
                  f"contribution {contrib:.4f} s (model {q_contrib:.4f} s){extra}")
        held = t.filter(pl.col("cause") == CAUSES[1])
        print(f"  bursts sent while an earlier byte was unacknowledged: {t['hole_at_send'].sum()} "
              f"({t['hole_at_send'].mean():.4f}, first order {hole_at_send_share(p, rto_s, rtt_s):.4f}); "
              f"of them held > 1.5 RTT: {held.height}, "
              f"> {TIMEOUT_NS / 1e9:g} s: {(held['response_ns'] > TIMEOUT_NS).sum()}; their wait beyond one RTT adds "
              f"{(held['response_ns'].sum() / 1e9 - held.height * rtt_s) / n:.4f} s to the mean, "
              f"sim − Eq. (12) is {sim_s - model:.4f} s")
        long = held.filter(pl.col("response_ns") > TIMEOUT_NS)
        fast = long.filter(pl.col("hole_repair_ns") < TIMEOUT_NS)
        print(f"  of the {long.height} held > {TIMEOUT_NS / 1e9:g} s: the hole's fast retransmit lost in "
              f"{fast['hole_repair_lost'].sum()}, sent and not lost in {(~fast['hole_repair_lost']).sum()}; "
              f"no fast retransmit of the hole (its RTO) in {long.height - fast.height}")
        cover_s = t["cover_ns"].mean() / 1e9
        print(f"  timed to the first ACK covering the burst by SACK or cumulative ACK: mean {cover_s:.4f} s, "
              f"sim/model {cover_s / model:.2f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("what", choices=["red-diversity", "gain", "copied-retransmissions", "padding-model"])
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    {"red-diversity": red_diversity, "gain": gain, "copied-retransmissions": copied_retransmissions,
     "padding-model": padding_model}[args.what](args.seed)


if __name__ == "__main__":
    main()
