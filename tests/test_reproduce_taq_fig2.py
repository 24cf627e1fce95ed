"""TAQ Figure 2 (DropTail): the paper's claims, on a shorter run than docs/reproductions."""

from __future__ import annotations

import pytest

pytest.importorskip("smallpipe._smallpipe", reason="native module not built")

from smallpipe.experiments import taq_fig2


@pytest.fixture(scope="module")
def table():
    return taq_fig2.run(rates_bps=[1_000_000], fair_shares_bps=[10_000, 50_000], duration_s=1500.0, seed=2)


def test_utilization_stays_above_90_percent(table) -> None:
    assert table["utilization"].min() > taq_fig2.PAPER["utilization_min"]


def test_short_term_fairness_collapses_below_the_knee_but_not_above(table) -> None:
    low = table.filter(table["fair_share_bps"] == 10_000).row(0, named=True)
    high = table.filter(table["fair_share_bps"] == 50_000).row(0, named=True)
    assert low["fair_share_bps"] < taq_fig2.PAPER["short_term_knee_bps"] < high["fair_share_bps"]
    assert low["short_term_jain"] < 0.8
    assert low["zero_share"] > 0.10, "a sizeable share of flows gets nothing in a 20 s slice"
    assert high["short_term_jain"] > 0.9


def test_long_term_fairness_stays_high_while_short_term_collapses(table) -> None:
    # The paper's point (§2.3): "Long-term fairness is high" while 20 s fairness collapses below
    # 30 kbit/s, i.e. the link admits flows arbitrarily per slice but evenly over the run.
    # Tolerances from docs/reproductions/taq.md: long-term above 0.95 at both points (0.969 and
    # 0.9998 on this 1500 s run), and at 10 kbit/s long-term above short-term by at least 0.2
    # (0.97 against 0.68). Without the senders' random delay (phase effects) long-term falls to
    # 0.73, so this is not implied by the set-up.
    assert table["long_term_jain"].min() > 0.95
    low = table.filter(table["fair_share_bps"] == 10_000).row(0, named=True)
    assert low["long_term_jain"] - low["short_term_jain"] > 0.2
