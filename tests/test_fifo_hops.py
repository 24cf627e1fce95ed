"""`fifo_hops = "computed"` on the many-flow scenarios: the same tables as the events.

The two modes differ only in the order of events of equal time (docs/scenario.md). Such a
tie changes a result only when a transmission ends at the very nanosecond a packet is
offered to the same full DropTail (computed links count the transmission as ended first),
or when two packets reach one node at the same nanosecond and are offered in the other
order. Had one of these changed a decision, the runs would drift apart from there like two
seeds, and the comparison would be against the spread across seeds; on these scenarios
none does, so the criterion is the strictest one: every table identical. The events each
run saves are counted independently: one TxDone per transmission on a link that runs
computed, i.e. every transmission but those of the event-driven links, and one arrival per
packet a chained bottleneck direction brought to the access links after it: every packet
it sent but those still on its wire at the end, which are at most one per smallest packet's
(40 bytes) sending time in its propagation delay.
"""

import json
import sys
from pathlib import Path

import polars as pl
import pytest
from typer.testing import CliRunner

pytest.importorskip("smallpipe._smallpipe", reason="native module not built (run `maturin develop`)")

import smallpipe
from smallpipe.cli import app
from smallpipe.experiments import thesis_fig52
from smallpipe.presets import taq_dumbbell

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benches" / "validation"))
import sp_side
import specs

TABLES = ("flows", "links", "slices", "units", "bursts")


def with_hops(scenario: smallpipe.Scenario, hops: str) -> smallpipe.Scenario:
    return scenario.with_overrides({"fifo_hops": hops})


def many_flows_n50(seed: int) -> smallpipe.Scenario:
    spec = specs.many(50, seed)
    return sp_side.scenario(spec, spec["warmup_s"] + spec["duration_s"])[0]


BOTH = ("bottleneck", "bottleneck_reverse")


@pytest.mark.parametrize(
    ("name", "build", "event_links", "chained_links"),
    [
        ("validation many-flow N = 50, seed 1", lambda: many_flows_n50(1), (), BOTH),
        ("validation many-flow N = 50, seed 2", lambda: many_flows_n50(2), (), BOTH),
        ("TAQ dumbbell N = 200, DropTail", lambda: taq_dumbbell(flows=200, rate_bps=2_000_000, duration_s=200), (),
         BOTH),
        # TAQ is no FIFO, and reads the reverse direction's departures: both keep their events.
        ("TAQ dumbbell N = 200, TAQ",
         lambda: taq_dumbbell(flows=200, rate_bps=2_000_000, duration_s=200, queue={"kind": "taq"}), BOTH, ()),
        # Access links as fast as the bottleneck chain too.
        ("thesis Figure 5.2, tcp, 2 s", lambda: thesis_fig52.scenario(1, "tcp", duration_s=2), (), BOTH),
        # FQ is no FIFO; it ignores the reverse direction, which runs computed and chained.
        ("thesis Figure 5.2, fq, 2 s", lambda: thesis_fig52.scenario(1, "fq", duration_s=2), ("bottleneck",),
         ("bottleneck_reverse",)),
    ],
)
def test_computed_hops_give_the_same_tables_with_fewer_events(name, build, event_links, chained_links):
    scenario = build()
    events = smallpipe.simulate(with_hops(scenario, "events"))
    computed = smallpipe.simulate(with_hops(scenario, "computed"))
    for table in TABLES:
        assert getattr(computed, table).equals(getattr(events, table)), f"{name}: {table}"
    assert computed.meta["packets"] == events.meta["packets"]
    kept = int(events.links.filter(pl.col("name").is_in(event_links))["tx_pkts"].sum())
    chained = events.links.filter(pl.col("name").is_in(chained_links))
    link = scenario.to_dict()["link"]
    smallest_packet_ns = 40 * 8 * 1e9 / link["rate_bps"]
    on_the_wire = len(chained) * (int(link["delay_ms"] * 1e6 / smallest_packet_ns) + 1)
    arrivals_saved = events.meta["events"] - computed.meta["events"] - (events.meta["packets"] - kept)
    sent = int(chained["tx_pkts"].sum())
    assert sent - on_the_wire <= arrivals_saved <= sent, name


def test_the_default_is_events_and_a_bad_value_is_named():
    scenario = taq_dumbbell(flows=2, rate_bps=1_000_000, duration_s=1)
    assert "fifo_hops" not in scenario.to_dict()
    with pytest.raises(smallpipe.ConfigError) as error:
        with_hops(scenario, "lazy")
    assert error.value.field == "fifo_hops" and "lazy" in error.value.value and "computed" in error.value.allowed


def test_bench_takes_fifo_hops():
    args = ["bench", "--flows", "10", "--rate-bps", "200000", "--duration-s", "5", "--json"]
    runs = {}
    for hops in ("events", "computed"):
        result = CliRunner().invoke(app, [*args, "--fifo-hops", hops])
        assert result.exit_code == 0, result.output
        runs[hops] = json.loads(result.output.strip().splitlines()[-1])
        assert runs[hops]["fifo_hops"] == hops
    assert runs["computed"]["packets"] == runs["events"]["packets"]
    # Every link of the DropTail dumbbell runs computed: one TxDone saved per transmission;
    # both bottleneck directions are chained: one arrival saved per packet the forward one
    # brought to its far end (all it sent but at most one on its 1 ms wire: a 40-byte packet
    # takes 1.6 ms at 200 kbit/s), and some for the reverse one.
    saved = runs["events"]["events"] - runs["computed"]["events"]
    assert saved >= runs["events"]["packets"] + runs["events"]["bottleneck_packets"] - 1
