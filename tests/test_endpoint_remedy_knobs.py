"""The endpoint remedies on the testbed: Linux has thin-stream linear timeouts (a sysctl),
none of the others; the knobs map the one and refuse the rest, naming the field."""

import pytest
from smallpipe.scenario import Scenario
from smallpipe.testbed.knobs import linux_settings

BASE = {"seed": 1, "duration_s": 10.0, "link": {"rate_bps": 1e6, "delay_ms": 1.0},
        "flows": [{"count": 1, "app": "bulk", "rtt_ms": 50.0}]}


def test_thin_linear_timeouts_is_linux_sysctl():
    on = linux_settings(Scenario(**BASE, tcp={"thin_linear_timeouts": True}))
    assert "'net.ipv4.tcp_thin_linear_timeouts': '1'" in str(on)
    assert "tcp_thin_linear_timeouts" not in str(linux_settings(Scenario(**BASE)))


@pytest.mark.parametrize(("key", "value"), [("diversity_copies", 2), ("padding_dummies", 3),
                                            ("fully_backlogged", True), ("min_rto_prime_ms", 500.0),
                                            ("smart_framing", True)])
def test_remedies_linux_lacks_are_refused(key, value):
    with pytest.raises(ValueError, match=f"tcp.{key}"):
        linux_settings(Scenario(**BASE, tcp={key: value}))


@pytest.mark.parametrize(("key", "value"), [("ssthresh_from", "bytes_in_flight"), ("recovery_exit", "ns3")])
def test_ns3_diagnostic_rules_are_refused_on_linux(key, value):
    with pytest.raises(ValueError, match=f"tcp.{key}.*{value}"):
        linux_settings(Scenario(**BASE, tcp={key: value}))
