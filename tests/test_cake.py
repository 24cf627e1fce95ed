"""CAKE from Python (docs/cake.md): its knobs validate with errors naming the field, its tins
follow the flow groups' DSCP, and its drops land in the links table by reason."""

from __future__ import annotations

import polars as pl
import pytest
from smallpipe import ConfigError, Scenario
from smallpipe.result import simulate


def test_bad_cake_knobs_name_the_field() -> None:
    with pytest.raises(ConfigError, match="diffserv"):
        Scenario(flows=[{"app": "bulk"}], link={"queue": {"kind": "cake", "diffserv": "diffserv5"}})
    with pytest.raises(ConfigError, match="interval_ns"):
        Scenario(flows=[{"app": "bulk"}], link={"queue": {"kind": "cake", "target_ns": 10, "interval_ns": 5}})


def _cs1_share(diffserv: str) -> tuple[float, dict[str, object]]:
    """Four bulk flows marked CS1 (DSCP 8) and four unmarked on 10 Mbit/s for 20 s: the CS1
    group's share of the bytes, and the bottleneck's links row."""
    scenario = Scenario(
        duration_s=20.0,
        link={"rate_bps": 10e6, "queue": {"kind": "cake", "diffserv": diffserv}},
        flows=[{"app": "bulk", "count": 4, "dscp": 8}, {"app": "bulk", "count": 4}],
    )
    # The simulator tells the discipline its link, and the canonical scenario records it.
    assert scenario["link"]["queue"]["link_rate_bps"] == 10_000_000
    result = simulate(scenario)
    by_group = result.flows.group_by("group").agg(pl.col("bytes_delivered").sum()).sort("group")
    cs1, unmarked = by_group["bytes_delivered"].to_list()
    return cs1 / (cs1 + unmarked), result.links.row(0, named=True)


def test_cs1_goes_to_the_bulk_tin_and_drops_are_counted_by_reason() -> None:
    """In `diffserv3` CS1 is the Bulk tin: served first only up to 6.25% of the link, and
    otherwise only when Best Effort has nothing queued, so it gets far less than the half
    that per-flow fairness gives it in `besteffort` (eight equal flows, four of them CS1)."""
    bulk_share, link = _cs1_share("diffserv3")
    fair_share, _ = _cs1_share("besteffort")
    assert bulk_share < 0.25, bulk_share
    assert abs(fair_share - 0.5) < 0.1, fair_share
    # COBALT's drops are `early`; with the ACK filter off there are no ACK-filter drops; the
    # reasons add up to the total.
    assert link["drop_early"] > 0 and link["drop_ack_filter"] == 0
    assert link["dropped_pkts"] == sum(int(v) for k, v in link.items() if k.startswith("drop_"))  # type: ignore[call-overload]
