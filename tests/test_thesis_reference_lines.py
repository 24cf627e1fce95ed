"""The thesis's reference lines on Figures 5.2 and 5.3 (thesis_fig52/53 plots) against the
committed full tables (docs/reproductions/thesis/) and against hand arithmetic."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from smallpipe.experiments import thesis_fig51, thesis_fig52, thesis_fig53
from smallpipe.models import fct_bounds

THESIS = Path(__file__).resolve().parents[1] / "docs" / "reproductions" / "thesis"


def test_figure_5_3_ceilings_by_hand():
    # 40 ms RTT, 10 Mbit/s, 1000-byte packets (0.8 ms each). IW 2: 32 packets go in rounds
    # 2+4+8+16 = 30, then 2 more in round 5: 5.5 RTT + 2 × 0.8 ms = 0.2216 s. IW 10: 10+20,
    # then 2 in round 3: 3.5 RTT + 1.6 ms = 0.1416 s. Alone at full rate: 1.5 RTT + 32 × 0.8 ms.
    fcts = thesis_fig53.ceilings()
    assert list(fcts.values()) == pytest.approx([0.2216, 0.1416, 0.0856])
    assert thesis_fig53.utilization_ceiling(1, 0.2216) == pytest.approx(32 / (0.2216 * 1250))
    assert thesis_fig53.utilization_ceiling(8, 0.1416) == 1.0


def test_figure_5_3_medians_stay_under_their_ceilings():
    # Each generator starts its next flow only once the last has completed, so no median
    # per-second utilization exceeds n·32 packets per FCT of its protocol's lower bound.
    table = pl.read_csv(THESIS / "thesis-fig5.3.csv")
    fcts = thesis_fig53.ceilings()
    iw_of = {"tcp": 2, "iw10": 10, "red": 10, "fq": 10}
    for row in table.iter_rows(named=True):
        n = row["generators"]
        assert row["median"] <= thesis_fig53.utilization_ceiling(n, fcts["processor-sharing ceiling"])
        if row["protocol"] in iw_of:
            ceiling = thesis_fig53.utilization_ceiling(n, fcts[f"slow-start ceiling, IW {iw_of[row['protocol']]}"])
            assert row["median"] <= ceiling, row
    # With one generator the link idles between rounds: the window protocols come within
    # 10% of their slow-start ceiling (the thesis page's "as slow start predicts").
    one = {r["protocol"]: r["median"] for r in table.filter(generators=1).iter_rows(named=True)}
    assert one["tcp"] >= 0.9 * thesis_fig53.utilization_ceiling(1, fcts["slow-start ceiling, IW 2"])
    assert one["iw10"] >= 0.9 * thesis_fig53.utilization_ceiling(1, fcts["slow-start ceiling, IW 10"])


def test_figure_5_2_window_protocols_are_never_faster_than_slow_start():
    table = pl.read_csv(THESIS / "thesis-fig5.2.csv")
    rate_bps = thesis_fig52.FULL["rate_bps"]
    for row in table.filter(pl.col("protocol") != "rcp").iter_rows(named=True):
        iw = 2 if row["protocol"] == "tcp" else 10
        # A bin's flows are at least size_lo_pkts long; the bound grows with the size.
        bound = fct_bounds.slow_start_fct_s(row["size_lo_pkts"], thesis_fig52.RTT_MS / 1000, rate_bps,
                                          thesis_fig51.PACKET_SIZE_BYTES, iw)
        assert row["median_s"] >= bound, row
