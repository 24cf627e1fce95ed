"""The testbed's handling of tcp.loss_detection (pure: no namespaces, no root)."""

import pytest
from smallpipe import ConfigError, Scenario
from smallpipe.testbed.knobs import linux_settings, rack_always_on


def _scenario(**tcp):
    return Scenario(flows=[{"app": "bulk"}], duration_s=1.0, tcp=tcp)


@pytest.mark.parametrize(("release", "always"), [("6.18.0-1-amd64", True), ("6.17.2", True), ("6.16.9-arch1", False),
                                                 ("5.15.0-91-generic", False), ("7.0", True), ("weird", False)])
def test_rack_is_always_on_from_linux_6_17(release: str, always: bool) -> None:
    # Linux 6.17 removed the RFC 6675 recovery (commit 1c120191dcec).
    assert rack_always_on(release) is always


def test_rack_switches_the_sysctl_on_and_dupthresh_off() -> None:
    assert linux_settings(_scenario(loss_detection="rack")).sysctls["net.ipv4.tcp_recovery"] == "1"
    assert linux_settings(_scenario()).sysctls["net.ipv4.tcp_recovery"] == "0"


def test_rack_without_sack_is_refused_naming_the_field() -> None:
    with pytest.raises(ConfigError, match="loss_detection"):
        _scenario(loss_detection="rack", recovery="newreno")
