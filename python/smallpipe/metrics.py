"""Metrics on simulation results: fairness, goodput, utilisation, flow completion times.

Pure functions of the result tables (see :mod:`smallpipe.result` for the schemas).
Names follow the TAQ paper (Section 2.3): *long-term* fairness is computed over whole
runs, *short-term* fairness over 20 s time slices, where the small packet regime shows
up as "arbitrary admission control": ~30% of flows get nothing in a slice while ~40%
of flows take over 80% of the bytes.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import numpy.typing as npt
import polars as pl

__all__ = [
    "DEFAULT_SIZE_EDGES_BYTES",
    "EVOLUTION_STATES",
    "TOP_SHARE_OF_FLOWS",
    "fct_normalized",
    "fct_summary",
    "flow_evolution",
    "goodput_bps",
    "hang_shares",
    "jain",
    "jain_by_class",
    "jain_per_slice",
    "long_term_jain",
    "modified_fairness_index",
    "queue_delay_quantiles",
    "slow_start_bound_s",
    "timeout_summary",
    "to_float",
    "udp_summary",
    "utilization",
]

TOP_SHARE_OF_FLOWS = Fraction(2, 5)
"""The "top 40% of flows" of the TAQ paper's short-term unfairness observation
(a fraction, so that ``ceil(0.4 · n)`` is exact: ``15 · 0.4`` is 6.000000000000001)."""


def jain(x: npt.ArrayLike) -> float:
    """Jain's fairness index of the allocations ``x`` (Jain, Chiu, Hawe 1984).

    ``J(x) = (Σ xᵢ)² / (n · Σ xᵢ²)``, with ``n`` the number of entries: zeros count,
    a starved flow lowers the index. ``J = 1`` when all shares are equal and ``1/n``
    when one entry has everything. ``J`` is invariant to scaling ``x``.

    An all-zero ``x`` has no shares to compare (0/0): the result is ``nan``.

    Raises:
        ValueError: ``x`` is empty or has a negative entry.
    """
    values = np.asarray(x, dtype=float)
    if values.size == 0:
        raise ValueError("jain() of an empty allocation is undefined")
    if (values < 0).any():
        raise ValueError("jain() needs non-negative allocations")
    largest = float(values.max())
    if largest == 0.0:
        return math.nan
    # J is scale invariant; dividing by the largest share keeps the squares from
    # underflowing (tiny shares) or overflowing (huge ones).
    scaled = values / largest
    return float(scaled.sum()) ** 2 / (values.size * float(np.square(scaled).sum()))


def jain_per_slice(
    slices: pl.DataFrame,
    *,
    slice_ns: int | None = None,
    flows: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """Short-term fairness: Jain's index over the bytes of each time slice.

    Arguments:
        slices: the ``slices`` table (``flow_id, slice, start_ns, bytes``), dense over
            each flow's lifetime.
        slice_ns: re-bin to this slice length first (e.g. the TAQ paper's 20 s);
            it must be a multiple of the native slice length. Slice ``k`` covers
            ``[k · slice_ns, (k+1) · slice_ns)``; when the run length is not a
            multiple of ``slice_ns`` the last slice is shorter.
        flows: the ``flows`` table. When given, only flows *active* in a slice count
            there: a flow is active in ``[s, e)`` if it started before the slice ends
            (``start_ns < e``) and had not finished when it began (``end_ns`` null or
            ``end_ns > s``), i.e. its lifetime overlaps the slice. (With a single
            native slice and no ``slice_ns``, ``e`` is unknown and only the second
            condition applies.) Without ``flows`` every flow counts in every slice.

    Returns:
        One row per slice: ``slice``, ``start_ns``, ``jain`` (null when no active
        flow received a byte), ``n_flows`` (active flows), ``zero_share`` (fraction of
        active flows with 0 bytes in the slice), ``top40_share`` (fraction of the
        slice's bytes taken by the ``ceil(0.4 · n_flows)`` flows with the most bytes;
        null when the slice carried no bytes).

    Raises:
        ValueError: ``slice_ns`` is not a positive multiple of the native length.
    """
    binned = slices
    length_ns: int | None
    if slice_ns is not None:
        native_ns = _native_slice_ns(slices)
        if slice_ns <= 0 or (native_ns is not None and slice_ns % native_ns != 0):
            raise ValueError(
                f"slice_ns={slice_ns} must be a positive multiple of the native slice length {native_ns} ns"
            )
        binned = (
            slices.with_columns(slice=pl.col("start_ns") // slice_ns)
            .group_by("flow_id", "slice")
            .agg(pl.col("bytes").sum())
            .with_columns(start_ns=pl.col("slice") * slice_ns)
        )
        length_ns = slice_ns
    else:
        length_ns = _native_slice_ns(slices)

    if flows is not None:
        end_of_slice = pl.col("start_ns") + length_ns if length_ns is not None else pl.lit(None)
        binned = binned.join(
            flows.select("flow_id", pl.col("start_ns").alias("flow_start_ns"), "end_ns"),
            on="flow_id",
            how="inner",
        ).filter(
            (pl.col("flow_start_ns") < end_of_slice).fill_null(True),
            pl.col("end_ns").is_null() | (pl.col("end_ns") > pl.col("start_ns")),
        )

    n = pl.len()
    top_count = (n * TOP_SHARE_OF_FLOWS.numerator + TOP_SHARE_OF_FLOWS.denominator - 1) // (
        TOP_SHARE_OF_FLOWS.denominator
    )
    rank = pl.col("bytes").rank("ordinal", descending=True)
    total = pl.col("bytes").sum().cast(pl.Float64)
    return (
        binned.group_by("slice")
        .agg(
            pl.col("start_ns").first(),
            jain=pl.when(total > 0).then(total**2 / (n * (pl.col("bytes").cast(pl.Float64) ** 2).sum())),
            n_flows=n.cast(pl.Int64),
            zero_share=(pl.col("bytes") == 0).mean(),
            top40_share=pl.when(total > 0).then(pl.col("bytes").filter(rank <= top_count).sum() / total),
        )
        .sort("slice")
    )


def _native_slice_ns(slices: pl.DataFrame) -> int | None:
    """The native slice length: the gap between consecutive slice starts (None if one slice)."""
    starts = slices.get_column("start_ns").unique().sort()
    if starts.len() < 2:
        return None
    return int(starts[1] - starts[0])


def goodput_bps(flows: pl.DataFrame, duration_ns: int) -> pl.DataFrame:
    """Per-flow goodput over each flow's lifetime.

    ``goodput_bps = 8 · bytes_delivered / lifetime_s`` with
    ``lifetime = (end_ns if finished else duration_ns) − start_ns``. Flows that
    never started within the run (lifetime ≤ 0) get null.

    Returns:
        ``flow_id, goodput_bps``.
    """
    lifetime_ns = pl.col("end_ns").fill_null(duration_ns) - pl.col("start_ns")
    return flows.select(
        "flow_id",
        goodput_bps=pl.when(lifetime_ns > 0).then(pl.col("bytes_delivered") * 8 * 1e9 / lifetime_ns),
    )


def long_term_jain(flows: pl.DataFrame, *, duration_ns: int | None = None) -> float:
    """Long-term fairness: Jain's index over whole runs.

    Without ``duration_ns`` the index is over ``bytes_delivered``, which is right
    when all flows share the same lifetime (the TAQ paper's Figure 2: bulk flows that
    all start in the first second). With ``duration_ns`` it is over per-flow goodput
    (:func:`goodput_bps`), which compares flows of different lifetimes fairly;
    flows that never started are left out.
    """
    if duration_ns is None:
        return jain(flows.get_column("bytes_delivered").to_numpy())
    goodput = goodput_bps(flows, duration_ns).get_column("goodput_bps").drop_nulls()
    return jain(goodput.to_numpy())


def jain_by_class(
    flows: pl.DataFrame,
    slices: pl.DataFrame | None = None,
    *,
    by: str = "group",
    slice_ns: int | None = None,
    duration_ns: int | None = None,
) -> pl.DataFrame:
    """Jain's index within each class of flows (e.g. short and long), the isolation paper's
    per-class fairness.

    Arguments:
        flows: the ``flows`` table; ``by`` names its class column (default the flow group).
        slices: when given, the short-term index per class and slice, as
            :func:`jain_per_slice` computes it (active flows only, re-binned to
            ``slice_ns``); otherwise the long-term index per class, as
            :func:`long_term_jain` computes it (over goodput when ``duration_ns`` is given).

    Returns:
        Long-term: ``<by>, jain, n_flows``. Short-term: ``<by>`` plus the columns of
        :func:`jain_per_slice`. Sorted by class (and slice).
    """
    rows = []
    for (cls,), members in flows.group_by(by, maintain_order=True):
        if slices is None:
            rows.append(
                pl.DataFrame(
                    {by: [cls], "jain": [long_term_jain(members, duration_ns=duration_ns)], "n_flows": [members.height]},
                    schema={by: flows.schema[by], "jain": pl.Float64, "n_flows": pl.Int64},
                )
            )
        else:
            own = slices.join(members.select("flow_id"), on="flow_id", how="semi")
            per_slice = jain_per_slice(own, slice_ns=slice_ns, flows=members)
            rows.append(per_slice.select(pl.lit(cls, dtype=flows.schema[by]).alias(by), pl.all()))
    return pl.concat(rows).sort([by, "slice"] if slices is not None else [by])


def queue_delay_quantiles(
    queue_delays: pl.DataFrame, quantiles: Sequence[float] = (0.5, 0.9, 0.99), *, link: str = "bottleneck"
) -> dict[float, float]:
    """Queueing-delay quantiles (ms) of one link from the ``queue_delays`` histogram: the
    smallest bucket value with at least a ``q`` share of packets at or below it (the
    nearest-rank quantile, to the histogram's 1% resolution).

    Raises:
        ValueError: no packet departed the link, or a quantile is outside (0, 1].
    """
    rows = queue_delays.filter(pl.col("link") == link).sort("delay_ns")
    total = int(rows.get_column("packets").sum()) if rows.height else 0
    if total == 0:
        raise ValueError(f"link {link!r} has no queueing delays recorded")
    cumulative = rows.get_column("packets").cum_sum().to_numpy()
    delays_ms = rows.get_column("delay_ns").to_numpy() / 1e6
    out = {}
    for q in quantiles:
        if not 0.0 < q <= 1.0:
            raise ValueError(f"quantile {q} must lie in (0, 1]")
        index = int(np.searchsorted(cumulative, math.ceil(q * total)))
        out[q] = float(delays_ms[index])
    return out


def utilization(links: pl.DataFrame, name: str = "bottleneck") -> float:
    """Utilisation of one link: ``8 · tx_bytes / (rate_bps · duration_s)``, from the ``links`` table.

    Raises:
        KeyError: no link has that name.
    """
    row = links.filter(pl.col("name") == name)
    if row.height == 0:
        raise KeyError(f"no link named {name!r}; links: {links.get_column('name').to_list()}")
    return float(row.get_column("utilization")[0])


def udp_summary(udp_flows: pl.DataFrame) -> pl.DataFrame:
    """The UDP sources of a run (a ``udp_flows`` table) per ``app``, FlowMonitor-style.

    ``loss_rate`` is dropped / (delivered + dropped): the datagrams still in flight at the
    end have no fate yet and are left out, as FlowMonitor's ``lostPackets`` leaves out
    packets not yet timed out. ``delay_mean_ms`` is the mean one-way delay of the delivered
    datagrams, ``delay_max_ms`` the largest.

    Returns:
        ``app``, ``sources``, ``packets_sent``, ``packets_delivered``, ``packets_dropped``,
        ``packets_in_flight``, ``bytes_delivered``, ``loss_rate`` (null when no datagram
        has a fate), ``delay_mean_ms`` (null when none was delivered), ``delay_max_ms``; one
        row per app, in name order; empty for a run without UDP sources.
    """
    fated = pl.col("packets_delivered") + pl.col("packets_dropped")
    return (
        udp_flows.group_by("app")
        .agg(
            sources=pl.len().cast(pl.Int64),
            packets_sent=pl.col("packets_sent").sum(),
            packets_delivered=pl.col("packets_delivered").sum(),
            packets_dropped=pl.col("packets_dropped").sum(),
            packets_in_flight=pl.col("packets_in_flight").sum(),
            bytes_delivered=pl.col("bytes_delivered").sum(),
            fated=fated.sum(),
            delay_sum_ns=pl.col("delay_sum_ns").sum(),
            delay_max_ns=pl.col("delay_max_ns").max(),
        )
        .with_columns(
            loss_rate=pl.when(pl.col("fated") > 0).then(pl.col("packets_dropped") / pl.col("fated")),
            delay_mean_ms=pl.when(pl.col("packets_delivered") > 0)
            .then(pl.col("delay_sum_ns") / pl.col("packets_delivered") / 1e6),
            delay_max_ms=pl.when(pl.col("packets_delivered") > 0).then(pl.col("delay_max_ns") / 1e6),
        )
        .drop("fated", "delay_sum_ns", "delay_max_ns")
        .sort("app")
    )


DEFAULT_SIZE_EDGES_BYTES: tuple[int, ...] = (0, 1_000, 10_000, 100_000, 1_000_000, 10_000_000)
"""Decade size buckets, as in the TAQ paper's Figure 1 (log-sized buckets of object sizes)."""


def fct_summary(flows: pl.DataFrame, buckets: Sequence[int] = DEFAULT_SIZE_EDGES_BYTES) -> pl.DataFrame:
    """Flow completion times by size bucket.

    Only flows with a finite ``size_bytes`` are bucketed; bucket ``k`` holds sizes in
    ``[buckets[k], buckets[k+1])`` and the last bucket is open-ended. The FCT of a
    finished flow is ``(end_ns − start_ns) / 1e9`` seconds. Percentiles use linear
    interpolation over finished flows only, so they are biased low when many flows
    of a bucket are unfinished: check ``unfinished``.

    Returns:
        ``size_lo_bytes, size_hi_bytes`` (null for the open bucket), ``flows``,
        ``unfinished``, ``fct_p10_s, fct_median_s, fct_p90_s, fct_p99_s, fct_max_s``;
        one row per non-empty bucket, in size order.

    Raises:
        ValueError: ``buckets`` is not strictly increasing.
    """
    edges = list(buckets)
    if any(lo >= hi for lo, hi in itertools.pairwise(edges)):
        raise ValueError(f"bucket edges must be strictly increasing, got {edges}")
    upper = pl.Series("size_hi_bytes", [*edges[1:], None], dtype=pl.Int64)
    lower = pl.Series("size_lo_bytes", edges, dtype=pl.Int64)
    sized = flows.filter(pl.col("size_bytes").is_not_null())
    bucket = np.searchsorted(edges, sized.get_column("size_bytes").to_numpy(), side="right") - 1
    fct_s = (pl.col("end_ns") - pl.col("start_ns")) / 1e9
    summary = (
        sized.with_columns(bucket=bucket)
        .filter(pl.col("bucket") >= 0)
        .group_by("bucket")
        .agg(
            flows=pl.len().cast(pl.Int64),
            unfinished=pl.col("end_ns").is_null().sum().cast(pl.Int64),
            fct_p10_s=fct_s.quantile(0.10, interpolation="linear"),
            fct_median_s=fct_s.quantile(0.50, interpolation="linear"),
            fct_p90_s=fct_s.quantile(0.90, interpolation="linear"),
            fct_p99_s=fct_s.quantile(0.99, interpolation="linear"),
            fct_max_s=fct_s.max(),
        )
        .sort("bucket")
    )
    bucket_index = summary.get_column("bucket")
    return summary.select(
        lower.gather(bucket_index),
        upper.gather(bucket_index),
        pl.exclude("bucket"),
    )


def slow_start_bound_s(size_bytes: pl.Expr, rtt_s: pl.Expr, *, mss_bytes: int, iw_pkts: int) -> pl.Expr:
    """The slow-start lower bound of a flow's completion time, ``(1 + log2(d / IW)) · RTT``
    for ``d = ⌈size / MSS⌉`` packets (``log2`` floored at 0 when ``d ≤ IW``): the handshake
    round plus the doubling rounds a loss-free flow needs (the thesis's normalisation)."""
    packets = (size_bytes / mss_bytes).ceil()
    rounds = (packets / iw_pkts).log(2).clip(lower_bound=0.0)
    return (1.0 + rounds) * rtt_s


def fct_normalized(flows: pl.DataFrame, *, mss_bytes: int, iw_pkts: int) -> pl.DataFrame:
    """Finished sized flows with ``fct_s`` and ``fct_norm`` = FCT / slow-start bound."""
    fct_s = (pl.col("end_ns") - pl.col("start_ns")) / 1e9
    bound = slow_start_bound_s(pl.col("size_bytes"), pl.col("rtt_ms") / 1e3, mss_bytes=mss_bytes, iw_pkts=iw_pkts)
    return flows.filter(pl.col("size_bytes").is_not_null(), pl.col("end_ns").is_not_null()).with_columns(
        fct_s=fct_s, fct_norm=fct_s / bound
    )


def hang_shares(units: pl.DataFrame, thresholds_s: Sequence[float] = (20.0, 60.0)) -> dict[float, float]:
    """Share of units (users) whose longest user-perceived hang exceeds each threshold.

    A hang (TAQ §2.3) is a time during which none of a user's open connections receives
    data; the simulator reports each unit's longest in ``longest_hang_ns``.
    """
    if units.height == 0:
        raise ValueError("hang_shares() needs at least one unit")
    hangs_s = units.get_column("longest_hang_ns").to_numpy() / 1e9
    return {t: float((hangs_s > t).mean()) for t in thresholds_s}


EVOLUTION_STATES = ("maintained", "dropped", "arriving", "stalled")


def flow_evolution(slices: pl.DataFrame) -> pl.DataFrame:
    """Flow evolution per epoch (TAQ §5.2, Figure 9), from slices one epoch long.

    A flow is *active* in an epoch when it received data then, *silent* otherwise. Between
    consecutive epochs of its lifetime a flow is ``maintained`` (active → active),
    ``dropped`` (active → silent), ``arriving`` (silent → active) or ``stalled``
    (silent → silent: a repeated timeout). Run with ``slice_s`` equal to the epoch (about
    one RTT) for the paper's definition.

    Returns one row per epoch (from the second on): ``slice`` and a count per state.
    """
    active = slices.sort("flow_id", "slice").with_columns(active=pl.col("bytes") > 0)
    transitions = active.with_columns(
        before=pl.col("active").shift(1).over("flow_id"),
        previous_slice=pl.col("slice").shift(1).over("flow_id"),
    ).filter(pl.col("previous_slice") == pl.col("slice") - 1)
    state = (
        pl.when(pl.col("before") & pl.col("active")).then(pl.lit("maintained"))
        .when(pl.col("before")).then(pl.lit("dropped"))
        .when(pl.col("active")).then(pl.lit("arriving"))
        .otherwise(pl.lit("stalled"))
    )
    counts = transitions.with_columns(state=state).group_by("slice").agg(
        [(pl.col("state") == s).sum().cast(pl.Int64).alias(s) for s in EVOLUTION_STATES]
    )
    return counts.sort("slice")


def timeout_summary(flows: pl.DataFrame) -> dict[str, float]:
    """How much flows suffer from timeouts: the share with at least one RTO or SYN
    timeout, RTOs per flow, time spent in timeout backoff (mean and worst per flow), and the median and worst longest silence (s)."""
    if flows.height == 0:
        raise ValueError("timeout_summary() needs at least one flow")
    silence_s = flows.get_column("longest_silence_ns").to_numpy() / 1e9
    hit = ((flows["timeouts"] > 0) | (flows["syn_timeouts"] > 0)).mean()
    backoff_s = flows.get_column("backoff_ns").to_numpy() / 1e9
    return {
        "share_with_timeout": to_float(hit),
        "timeouts_per_flow": to_float(flows["timeouts"].mean()),
        "syn_timeouts_per_flow": to_float(flows["syn_timeouts"].mean()),
        "backoff_mean_s": float(backoff_s.mean()),
        "backoff_max_s": float(backoff_s.max()),
        "longest_silence_median_s": float(np.median(silence_s)),
        "longest_silence_max_s": float(silence_s.max()),
    }


def modified_fairness_index(
    flows: pl.DataFrame, *, mss_bytes: int, iw_pkts: int, target_pkts_per_rtt: float
) -> float:
    """The size-aware paper's modified fairness index (its Section 5, Figure 9(b)).

    Each finished flow's throughput in packets per RTT, ``x = d / (FCT / RTT)``, is
    divided by its ideal ``r = min(d / ((1 + log2(d / IW)) rounds), target)``: what a
    loss-free transfer of ``d`` packets achieves, capped by the target throughput. The
    index is Jain's over the ``x / r``.
    """
    done = fct_normalized(flows, mss_bytes=mss_bytes, iw_pkts=iw_pkts)
    if done.height == 0:
        raise ValueError("modified_fairness_index() needs finished flows with a size")
    packets = (done["size_bytes"] / mss_bytes).ceil()
    rounds = 1.0 + np.clip(np.log2(packets.to_numpy() / iw_pkts), 0.0, None)
    throughput = packets.to_numpy() / (done["fct_s"].to_numpy() / (done["rtt_ms"].to_numpy() / 1e3))
    ideal = np.minimum(packets.to_numpy() / rounds, target_pkts_per_rtt)
    return jain(throughput / ideal)


def to_float(value: Any) -> float:
    """A Polars aggregate (``Series.mean()`` and kin, typed as any Python value) as a float."""
    return float(value)
