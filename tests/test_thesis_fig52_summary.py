import polars as pl
from smallpipe.experiments import thesis_fig52


def test_a_p99_between_the_slowest_finished_flow_and_an_unfinished_one_is_unknown() -> None:
    # 100 flows of 13 packets: 99 finished in 1..99 s, one never finished. The linear p99
    # sits at rank 0.99 * 99 = 98.01, a hundredth of the way from the slowest finished flow
    # (99 s) to the unfinished one: no number, so unknown. The median (50 s) is known.
    fcts = pl.DataFrame({"protocol": ["tcp"] * 100, "packets": [13] * 100,
                         "fct_s": [float(s) for s in range(1, 100)] + [None]})
    row = thesis_fig52.summary(fcts).filter(pl.col("size_lo_pkts") == 13).row(0, named=True)
    assert row["unfinished"] == 1
    assert row["median_s"] == 50.5
    assert row["p99_s"] is None


def test_a_p99_below_the_slowest_finished_flow_is_kept_when_some_flows_did_not_finish() -> None:
    # 300 flows: 299 finished in 1..299 s, one not. The p99 at rank 0.99 * 299 = 296.01 lies
    # between 297 s and 298 s (ranks 296 and 297): 297.01 s.
    fcts = pl.DataFrame({"protocol": ["tcp"] * 300, "packets": [13] * 300,
                         "fct_s": [float(s) for s in range(1, 300)] + [None]})
    row = thesis_fig52.summary(fcts).filter(pl.col("size_lo_pkts") == 13).row(0, named=True)
    assert abs(row["p99_s"] - 297.01) < 1e-9


def test_no_quantile_when_no_flow_of_a_size_finished() -> None:
    # Three 13-packet flows, none finished: neither the median nor the p99 is a number.
    fcts = pl.DataFrame({"protocol": ["tcp"] * 3, "packets": [13] * 3, "fct_s": [None, None, None]},
                        schema={"protocol": pl.String, "packets": pl.Int64, "fct_s": pl.Float64})
    row = thesis_fig52.summary(fcts).filter(pl.col("size_lo_pkts") == 13).row(0, named=True)
    assert (row["unfinished"], row["median_s"], row["p99_s"]) == (3, None, None)
