"""The ``link_counters`` table (each discipline's own counters, ``tc -s`` style) against the
``links`` table's common counters: the same events counted twice, by two pieces of code."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import polars as pl
import pytest
from smallpipe import simulate
from smallpipe.result import LINK_COUNTERS_SCHEMA, LINKS_SCHEMA, Result

PACKET_BYTES = 500


def _scenario(queue: dict[str, Any]) -> dict[str, Any]:
    # 12 bulk flows through a 1 Mbit/s link with a short buffer: every discipline drops.
    return {
        "seed": 5,
        "duration_s": 8.0,
        "slice_s": 2.0,
        "link": {"rate_bps": 1_000_000, "delay_ms": 1.0, "queue": queue},
        "tcp": {"packet_size_bytes": PACKET_BYTES},
        "flows": [{"count": 12, "app": "bulk", "rtt_ms": 100.0, "start_s": [0.0, 0.5]}],
    }


def _counters(result: Result, link: str = "bottleneck") -> dict[tuple[str, str | None], int]:
    rows = result.link_counters.filter(pl.col("link") == link)
    return {(r["counter"], r["class"]): r["value"] for r in rows.iter_rows(named=True)}


def _link(result: Result, link: str = "bottleneck") -> dict[str, Any]:
    return result.links.filter(pl.col("name") == link).row(0, named=True)


def _sum(counters: dict[tuple[str, str | None], int], name: str) -> int:
    return sum(v for (n, _), v in counters.items() if n == name)


@pytest.fixture(scope="module")
def fq_codel() -> Result:
    return simulate(_scenario({"kind": "fq_codel", "limit_pkts": 20}))


def test_every_link_has_its_marks_and_the_tables_their_schemas(fq_codel: Result) -> None:
    assert fq_codel.links.schema == LINKS_SCHEMA
    assert fq_codel.link_counters.schema == LINK_COUNTERS_SCHEMA
    # Marks are a column of every link (zero here: the simulated TCP sends no ECN-capable
    # packet, so FQ-CoDel drops where it would mark).
    assert fq_codel.links.get_column("marked_pkts").null_count() == 0
    assert set(fq_codel.links.get_column("marked_pkts")) == {0}
    assert set(fq_codel.link_counters.get_column("kind")) == {"total", "level"}
    # Only the forward bottleneck reports: the reverse direction's default discipline is
    # DropTail, which has no counters of its own.
    assert set(fq_codel.links.get_column("name")) == {"bottleneck", "bottleneck_reverse"}
    assert set(fq_codel.link_counters.get_column("link")) == {"bottleneck"}
    both = simulate(_scenario({"kind": "fq_codel"}) | {"link": {
        "rate_bps": 1_000_000, "delay_ms": 1.0, "queue": {"kind": "fq_codel"}, "reverse_queue": {"kind": "sfq"}}})
    assert set(both.link_counters.get_column("link")) == {"bottleneck", "bottleneck_reverse"}


def test_fq_codel_counters_match_the_links_table(fq_codel: Result) -> None:
    c, link = _counters(fq_codel), _link(fq_codel)
    assert {name for name, _ in c} == {
        "maxpacket", "drop_overlimit", "new_flow_count", "ecn_mark", "drop_overmemory",
        "new_flows_len", "old_flows_len", "memory_used",
    }
    # The fattest-flow drops are the flow_limit drops; a 20-packet buffer overflows here.
    assert c[("drop_overlimit", None)] == link["drop_flow_limit"] > 0
    # 20 packets of 500 bytes never reach the 32 MiB byte limit.
    assert c[("drop_overmemory", None)] == 0
    assert c[("ecn_mark", None)] == link["marked_pkts"]
    # Bulk data segments are the largest packets: packet_size_bytes.
    assert c[("maxpacket", None)] == PACKET_BYTES
    # At least every flow's queue became active once (hash collisions share a queue, so
    # at most 12 distinct queues; each re-activation after emptying counts again).
    assert c[("new_flow_count", None)] >= 1
    assert c[("memory_used", None)] <= 20 * PACKET_BYTES


def test_red_counters_split_the_links_drops() -> None:
    result = simulate(_scenario({"kind": "red", "limit_pkts": 25, "mode": "packets"}))
    c, link = _counters(result), _link(result)
    assert c[("early", None)] == link["drop_early"] > 0
    assert c[("early", None)] == c[("prob_drop", None)] + c[("forced_drop", None)]
    assert c[("pdrop", None)] == link["drop_overlimit"]
    assert c[("marked", None)] == link["marked_pkts"] == 0


def test_cake_tins_add_up_to_the_links_counters() -> None:
    result = simulate(_scenario({"kind": "cake", "limit_pkts": 20}))
    c, link = _counters(result), _link(result)
    assert {cls for _, cls in c} == {"best_effort", "bulk", "voice"}  # diffserv3
    assert _sum(c, "drops") == link["drop_overlimit"] + link["drop_early"] > 0
    assert _sum(c, "marks") == link["marked_pkts"]
    # Departures from the tins: those transmitted, plus at most one being serialized.
    assert _sum(c, "pkts") - link["tx_pkts"] in (0, 1)
    # Unmarked traffic is Best Effort: the other tins saw nothing.
    assert c[("pkts", "bulk")] == c[("pkts", "voice")] == 0


def test_taq_queues_add_up_to_the_links_counters() -> None:
    result = simulate(_scenario({"kind": "taq", "limit_pkts": 20}))
    c, link = _counters(result), _link(result)
    assert _sum(c, "dropped") == _sum(c, "dropped_predicted") == link["drop_overlimit"] > 0
    assert _sum(c, "dequeued") - link["tx_pkts"] in (0, 1)
    assert _sum(c, "enqueued") == _sum(c, "dequeued") + _sum(c, "dropped") + _sum(c, "queued")


def test_a_droptail_run_has_an_empty_typed_table_and_it_survives_a_write(tmp_path: Path) -> None:
    result = simulate(_scenario({"kind": "droptail", "limit_pkts": 20}))
    assert result.link_counters.height == 0 and result.link_counters.schema == LINK_COUNTERS_SCHEMA
    fq = simulate(_scenario({"kind": "sfq", "limit_pkts": 20}))
    back = Result.read(fq.write(tmp_path / "run"))
    assert back.link_counters.equals(fq.link_counters)
    assert _counters(back)[("perturbations", None)] == 0  # SFQ redraws its hash every 10 s: not in 8 s


def test_the_testbed_reads_the_boxs_link_counters_under_the_simulators_link_names(tmp_path: Path) -> None:
    from smallpipe.testbed.tables import _box_table

    # As the box's link_counters_csv writes it: an empty class is the whole discipline.
    (tmp_path / "link_counters.csv").write_text(
        "direction,counter,class,kind,value\n"
        "b_to_a,ecn_mark,,total,2\n"
        "b_to_a,pkts,best_effort,total,5\n"
        "a_to_b,memory_used,,level,3000\n"
    )
    table = _box_table(tmp_path / "link_counters.csv", LINK_COUNTERS_SCHEMA, "link")
    assert table.schema == LINK_COUNTERS_SCHEMA
    assert table.rows() == [
        ("bottleneck", "ecn_mark", None, "total", 2),
        ("bottleneck", "pkts", "best_effort", "total", 5),
        ("bottleneck_reverse", "memory_used", None, "level", 3000),
    ]
    # A box whose directions are both DropTail writes the header alone.
    (tmp_path / "empty.csv").write_text("direction,counter,class,kind,value\n")
    assert _box_table(tmp_path / "empty.csv", LINK_COUNTERS_SCHEMA, "link").height == 0


SWEEP = """
[base]
seed = 1
duration_s = 5.0
slice_s = 1.0

[base.link]
rate_bps = 1_000_000
delay_ms = 1.0
queue = { kind = "fq_codel", limit_pkts = 20 }

[base.tcp]
packet_size_bytes = 500

[[base.flows]]
count = 6
app = "bulk"
rtt_ms = 100.0

[grid]
seed = [1, 2]
"""


def test_a_sweeps_store_has_a_link_counters_view_that_agrees_with_its_links_view(tmp_path: Path) -> None:
    import duckdb
    from smallpipe.sweep import load_grid, run_sweep

    (tmp_path / "grid.toml").write_text(SWEEP)
    db = tmp_path / "s.duckdb"
    outcome = run_sweep(load_grid(tmp_path / "grid.toml"), db, run_root=tmp_path / "runs", workers=0)
    assert (outcome.ok, outcome.error) == (2, 0)
    with duckdb.connect(str(db), read_only=True) as connection:
        joined = connection.sql(
            "SELECT c.point_id, c.value AS drop_overlimit, l.drop_flow_limit FROM link_counters c "
            "JOIN links l ON l.point_id = c.point_id AND l.name = c.link "
            "WHERE c.counter = 'drop_overlimit'"
        ).pl()
    assert joined.height == 2
    assert (joined.get_column("drop_overlimit") == joined.get_column("drop_flow_limit")).all()
