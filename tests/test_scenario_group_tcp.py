"""Per-group TCP knobs (`[flows.tcp]`, issue 10): overrides, errors, and runs unchanged without them."""

from __future__ import annotations

import math

import pytest
from smallpipe import ConfigError
from smallpipe.result import simulate
from smallpipe.scenario import Scenario
from smallpipe.summary import setup_rows
from smallpipe.testbed.knobs import linux_settings

SIZE_BYTES = 10_000
BASE = {"seed": 1, "duration_s": 5.0, "link": {"rate_bps": 1e7, "delay_ms": 1.0},
        "flows": [{"app": "transfer", "size_bytes": SIZE_BYTES, "rtt_ms": 50.0},
                  {"app": "transfer", "size_bytes": SIZE_BYTES, "rtt_ms": 50.0}]}


def test_a_group_sends_segments_of_its_own_packet_size():
    # Group 1's MSS is 576 - 40 = 536 bytes (timestamps off), group 0's 1500 - 52 = 1448:
    # a loss-free 10 kB transfer takes ceil(10000 / MSS) data segments, so group 1 sends
    # 19 - 7 = 12 more (SYN and FIN alike in both).
    scenario = Scenario(**BASE).with_overrides({"flows.1.tcp.packet_size_bytes": 576, "flows.1.tcp.timestamps": False})
    assert scenario["flows"][1]["tcp"] == {"packet_size_bytes": 576, "timestamps": False}
    assert "tcp" not in scenario["flows"][0]
    flows = simulate(scenario).flows.sort("group")
    assert flows["retransmits"].to_list() == [0, 0]
    assert flows["bytes_delivered"].to_list() == [SIZE_BYTES, SIZE_BYTES]
    sent = flows["segments_sent"].to_list()
    assert sent[1] - sent[0] == math.ceil(SIZE_BYTES / 536) - math.ceil(SIZE_BYTES / 1448)


def test_errors_name_the_group_and_the_key():
    with pytest.raises(ConfigError, match=r"^flows\[1\]\.tcp\.initial_window_pkts: 0 .*1 to 100") as error:
        Scenario(**BASE).with_overrides({"flows.1.tcp.initial_window_pkts": 0})
    assert error.value.field == "flows[1].tcp.initial_window_pkts"
    with pytest.raises(ConfigError, match=r"flows\[0\]\.tcp\.mss: an unknown field"):
        Scenario(**BASE).with_overrides({"flows.0.tcp.mss": 500})
    # Checked merged: the group's own 536-byte MSS bounds its bursts.
    with pytest.raises(ConfigError, match=r"flows\[0\]\.burst_bytes: 1000 .*536"):
        Scenario(**{**BASE, "flows": [{"app": "interactive", "burst_bytes": 1000,
                                       "tcp": {"packet_size_bytes": 576, "timestamps": False}}]})


def test_a_table_equal_to_tcp_runs_bit_identical_to_none():
    # A group table that repeats [tcp]'s values changes nothing: same canonical [tcp], same run.
    plain = Scenario(**BASE)
    same = plain.with_overrides({"flows.0.tcp.initial_window_pkts": 4, "flows.1.tcp.recovery": "sack"})
    assert plain["tcp"]["initial_window_pkts"] == 4 and plain["tcp"]["recovery"] == "sack"
    a, b = simulate(plain), simulate(same)
    assert a.flows.drop("wall_seconds", strict=False).equals(b.flows.drop("wall_seconds", strict=False))
    assert a.links.equals(b.links)


def test_without_group_tables_the_canonical_form_has_none():
    assert all("tcp" not in group for group in Scenario(**BASE)["flows"])


def test_summary_lists_each_group_table():
    rows = dict(setup_rows(Scenario(**BASE).with_overrides({"flows.1.tcp.smart_framing": True})))
    assert rows["TCP of flows[1]"] == "smart_framing = true"
    assert "TCP of flows[0]" not in rows


def test_testbed_sets_congestion_per_group_and_refuses_other_keys():
    scenario = Scenario(**BASE).with_overrides({"flows.1.tcp.congestion": "cubic"})
    assert linux_settings(scenario).congestion_control == ["reno", "cubic"]
    assert linux_settings(scenario, congestion_control="bbr").congestion_control == ["bbr", "cubic"]
    # A value equal to [tcp]'s is honoured as it is; a different one cannot be per group.
    linux_settings(Scenario(**BASE).with_overrides({"flows.0.tcp.min_rto_ms": 1000.0}))
    with pytest.raises(ConfigError, match=r"flows\[1\]\.tcp\.initial_window_pkts: 10 .*congestion"):
        linux_settings(Scenario(**BASE).with_overrides({"flows.1.tcp.initial_window_pkts": 10}))
