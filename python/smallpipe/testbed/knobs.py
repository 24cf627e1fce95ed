"""Which scenario knobs real Linux TCP in the testbed honours, and how.

Every knob is either honoured (by a per-namespace sysctl, a route attribute, a socket
option, the box's config or the namespaces' MTU) or refused with a
:class:`~smallpipe.ConfigError` naming it; none is silently ignored. docs/testbed.md has
the same table for users.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from smallpipe.errors import config_error as _config_error
from smallpipe.scenario import Scenario

__all__ = ["MAX_UNITS", "LinuxSettings", "linux_settings", "rack_always_on"]

MAX_UNITS = 4096
"""Units per testbed run: each has an address of its own on the client veth."""

CONGESTION_CONTROLS = ("reno", "cubic", "bbr")

# Linux constants the scenario must agree with to be honoured.
_LINUX_INITIAL_RTO_MS = 1000.0  # TCP_TIMEOUT_INIT
_LINUX_DELACK_MAX_MS = 200.0  # TCP_DELACK_MAX; the delayed-ACK timer adapts between 40 ms and this
_LINUX_RTO_MAX_MS = (1000.0, 120_000.0)  # net.ipv4.tcp_rto_max_ms's range
_LINUX_SYN_RETRIES = (1, 127)  # net.ipv4.tcp_syn_retries's range
_LINUX_REORDERING = (1, 300)  # net.ipv4.tcp_reordering up to tcp_max_reordering
_LINUX_MIN_PACKET_BYTES = 88  # 40 header bytes + net.ipv4.tcp_min_snd_mss (48)
_DEFAULT_ACCESS_RATE_BPS = 1e8
_DEFAULT_GRANULARITY_MS = 1.0
_LINUX_RACK_ONLY = (6, 17)  # commit 1c120191dcec removed the RFC 6675 recovery: RACK always on


@dataclass(frozen=True)
class LinuxSettings:
    """What the testbed sets to honour a scenario.

    ``sysctls`` apply in both host namespaces; ``client_route`` and ``server_route`` are
    ``ip route`` attributes of the routes towards the other side.
    """

    sysctls: dict[str, str]
    client_route: list[str]
    server_route: list[str]
    mtu_bytes: int
    congestion_control: list[str] = field(default_factory=list)


def _refuse(path: str, value: Any, allowed: str) -> None:
    raise _config_error(path, repr(value) if isinstance(value, str) else str(value),
                        f"{allowed} (the testbed runs real Linux TCP; see docs/testbed.md)")


def _check_link(scenario: Scenario) -> None:
    link = scenario["link"]
    if link["access_rate_bps"] != _DEFAULT_ACCESS_RATE_BPS:
        _refuse("link.access_rate_bps", link["access_rate_bps"],
                f"the default {_DEFAULT_ACCESS_RATE_BPS:g}: the testbed's access links are unlimited veths")
    for key in ("drop_nth", "reverse_drop_nth"):
        if link[key]:
            _refuse(f"link.{key}", link[key], "[]: the box has no scripted drops")
    if scenario["topology"]["kind"] != "dumbbell":
        _refuse("topology.kind", scenario["topology"]["kind"], '"dumbbell": the box emulates one link')
    if scenario["edge"]["mark"] != "none":
        _refuse("edge.mark", scenario["edge"]["mark"], '"none": the testbed has no marking edge')
    for index, group in enumerate(scenario["flows"]):
        if group.get("dscp") is not None:
            _refuse(f"flows[{index}].dscp", group["dscp"], "unset: the testbed has no marking edge")
        if str(group["app"]).startswith("udp_"):
            _refuse(f"flows[{index}].app", group["app"],
                    "a TCP app: the testbed's plans carry TCP only (run UDP sources with "
                    "smallpipe-gen udp-send and udp-recv)")


def rack_always_on(kernel_release: str) -> bool:
    """Whether a kernel of this ``uname -r`` runs RACK whatever ``tcp_recovery`` says (6.17 on)."""
    numbers = kernel_release.split("-")[0].split(".")[:2]
    try:
        return tuple(int(n) for n in numbers) >= _LINUX_RACK_ONLY
    except ValueError:
        return False


# Every rule knob (a string value) with the values Linux honours and why the others are
# refused. A value missing here is refused, so a variant or knob added to the simulator
# needs no change in this file: it is a simulator rule until someone maps it to Linux. (A
# knob added after ids were kept is left out of the canonical dict at its default.)
_LINUX_RULES: dict[str, tuple[tuple[str, ...], str]] = {
    "recovery": (("sack", "newreno"), "Linux without SACK still does NewReno's partial-ACK recovery (RFC 6582)"),
    "congestion": (("reno", "cubic", "bbr"), "Linux's own modules"),
    "cwnd_growth": (("per_ack", "linux"), "Linux has no RFC 3465 byte counting with a limit L"),
    "ssthresh_from": (("flight_size", "cwnd"), "ns-3's BytesInFlight is a simulator diagnostic"),
    "ack_rule": (("rfc5681", "linux"), "Linux's delayed and quick ACKs"),
    "rto_rule": (("rfc6298", "linux"), "Linux's RTO estimator"),
    "recovery_rto": (("rfc6298", "linux"), "ns-3's timer restart is a simulator diagnostic"),
    "recovery_pacing": (("rfc6675", "prr"), "Linux's PRR"),
    "loss_detection": (("dupthresh", "rack"), "RACK, always on from Linux 6.17"),
    "pacing": (("none", "linux"), "Linux paces only when asked"),
    "rtt_samples": (("timed", "every_ack"), "Linux samples every ACK"),
    "syn_timeout_restart": (("rfc6298", "linux"), "Linux's tcp_init_transfer and tcp_init_metrics"),
    "dupack_rule": (("rfc",), "ns-3's duplicate-ACK count is a simulator diagnostic"),
    "disorder_ack": (("rfc",), "ns-3's CA_DISORDER ACK is a simulator diagnostic"),
    "fast_retransmit_rto": (("restart",), "Linux keeps its own timer rules; \"keep\" is a simulator diagnostic"),
    "recovery_pipe": (("rfc6675",), "ns-3's pipe is a simulator diagnostic"),
    "recovery_partial_ack": (("rfc6675",), "ns-3's partial-ACK retransmission is a simulator diagnostic"),
    "fast_recovery": (("rfc",), "ns-2's fast recovery window is a simulator rule"),
}


def _check_rules(tcp: dict[str, Any]) -> None:
    """Refuses every rule knob whose value Linux does not honour (`_LINUX_RULES`)."""
    for key, value in tcp.items():
        if key == "stack" or not isinstance(value, str):
            continue
        allowed, why = _LINUX_RULES.get(key, ((), "a simulator rule with no Linux counterpart"))
        if value not in allowed:
            shown = " or ".join(f'"{v}"' for v in allowed) or "its default (unset)"
            _refuse(f"tcp.{key}", value, f"{shown}: {why}")


def _tcp_sysctls(tcp: dict[str, Any], rfc: bool) -> dict[str, str]:
    sysctls = {
        "net.ipv4.tcp_no_metrics_save": "1",
        # A new namespace inherits the host's default congestion control, and an accepted
        # socket runs that one's init at the handshake, before the server sets the group's
        # TCP_CONGESTION. BBR's init turns internal pacing on and switching away never turns
        # it off: with a bbr default, "reno" senders would pace. Reno's init does nothing.
        "net.ipv4.tcp_congestion_control": "reno",
    }
    if tcp["packet_size_bytes"] < _LINUX_MIN_PACKET_BYTES:
        _refuse("tcp.packet_size_bytes", tcp["packet_size_bytes"],
                f"at least {_LINUX_MIN_PACKET_BYTES}: Linux sends no segment below tcp_min_snd_mss")
    sysctls["net.ipv4.tcp_sack"] = "1" if tcp["recovery"] == "sack" else "0"
    sysctls["net.ipv4.tcp_timestamps"] = "1" if tcp["timestamps"] else "0"
    sysctls["net.ipv4.tcp_slow_start_after_idle"] = "1" if tcp["slow_start_after_idle"] else "0"
    if not tcp["limited_transmit"]:
        _refuse("tcp.limited_transmit", False, "true: Linux always does limited transmit (RFC 3042)")
    low, high = _LINUX_REORDERING
    if not low <= tcp["dupack_threshold"] <= high:
        _refuse("tcp.dupack_threshold", tcp["dupack_threshold"], f"{low} to {high} (net.ipv4.tcp_reordering)")
    sysctls["net.ipv4.tcp_reordering"] = str(tcp["dupack_threshold"])
    rto_low_ms, rto_high_ms = _LINUX_RTO_MAX_MS
    if not rto_low_ms <= tcp["max_rto_ms"] <= rto_high_ms:
        _refuse("tcp.max_rto_ms", tcp["max_rto_ms"], f"{rto_low_ms:g} to {rto_high_ms:g} ms (net.ipv4.tcp_rto_max_ms)")
    sysctls["net.ipv4.tcp_rto_max_ms"] = str(round(tcp["max_rto_ms"]))
    if tcp["initial_rto_ms"] != _LINUX_INITIAL_RTO_MS:
        _refuse("tcp.initial_rto_ms", tcp["initial_rto_ms"], f"{_LINUX_INITIAL_RTO_MS:g}: Linux's initial RTO is fixed")
    low, high = _LINUX_SYN_RETRIES
    if not low <= tcp["syn_retries"] <= high:
        _refuse("tcp.syn_retries", tcp["syn_retries"], f"{low} to {high} (net.ipv4.tcp_syn_retries)")
    sysctls["net.ipv4.tcp_syn_retries"] = str(tcp["syn_retries"])
    sysctls["net.ipv4.tcp_synack_retries"] = str(tcp["syn_retries"])
    if tcp["clock_granularity_ms"] != _DEFAULT_GRANULARITY_MS:
        _refuse("tcp.clock_granularity_ms", tcp["clock_granularity_ms"],
                f"{_DEFAULT_GRANULARITY_MS:g}: Linux's timer granularity is its jiffy, not a knob")
    if not tcp["cubic_fast_convergence"]:
        _refuse("tcp.cubic_fast_convergence", False,
                "true: Linux's CUBIC fast convergence is a module parameter for the whole host, not per namespace")
    if tcp["hystart"]:
        _refuse("tcp.hystart", True,
                "false: Linux has no RFC 9406 HyStart++; its CUBIC's own HyStart is a module parameter "
                "(hystart) for the whole host, not per namespace, and Reno has none")
    if tcp["ack_first_data"]:
        _refuse("tcp.ack_first_data", True,
                "false: Linux starts every connection in quick-ACK mode, acknowledging its first segments at once")
    if tcp["thin_linear_timeouts"]:
        sysctls["net.ipv4.tcp_thin_linear_timeouts"] = "1"
    for key, off, allowed in (
        ("min_rto_prime_ms", None, "unset: Linux has no differentiated minimum RTO"),
        ("padding_dummies", 0, "0: the traffic generator writes no dummy packets"),
        ("diversity_copies", 1, "1: Linux TCP cannot send copies of a segment"),
        ("fully_backlogged", False, "false: the traffic generator does not pad idle time"),
        ("smart_framing", False, "false: Linux TCP always fills segments to the MSS it can"),
    ):
        if tcp[key] != off:
            _refuse(f"tcp.{key}", tcp[key], allowed)
    _check_rules(tcp)
    if tcp["overhead_max_ms"] is not None:
        _refuse("tcp.overhead_max_ms", tcp["overhead_max_ms"], "unset: real hosts have their own processing jitter")
    if tcp["delayed_ack"] and tcp["delayed_ack_ms"] != _LINUX_DELACK_MAX_MS:
        _refuse("tcp.delayed_ack_ms", tcp["delayed_ack_ms"],
                f"{_LINUX_DELACK_MAX_MS:g}: Linux's delayed-ACK timer adapts between 40 ms and 200 ms")
    rack = tcp.get("loss_detection", "dupthresh") == "rack"  # left out of the canonical dict at its default
    if rack and tcp["recovery"] != "sack":
        _refuse("tcp.loss_detection", "rack", '"dupthresh" without SACK')
    if rfc:
        # Linux extras beyond RFC 5681/6582/6675/6298, off where a sysctl allows it.
        sysctls |= {
            # RACK loss detection, on only if asked; "0" has no effect from Linux 6.17 (docs/testbed.md)
            "net.ipv4.tcp_recovery": "1" if rack else "0",
            # tail loss probes: 3 is Linux's default, TLP on (left out of the canonical dict when off)
            "net.ipv4.tcp_early_retrans": "3" if tcp.get("tail_loss_probe", False) else "0",
            # F-RTO spurious-timeout detection, SACK-enhanced as the simulator's `frto`
            "net.ipv4.tcp_frto": "2" if tcp.get("frto", False) else "0",
            "net.ipv4.tcp_syn_linear_timeouts": "0",  # SYN retries back off exponentially from the first
            "net.ipv4.tcp_autocorking": "0",
        }
    return sysctls


def linux_settings(scenario: Scenario, congestion_control: str | None = None, rfc: bool = True) -> LinuxSettings:
    """How to honour ``scenario`` on Linux; refuses what cannot be.

    Arguments:
        congestion_control: ``TCP_CONGESTION`` of every data sender whose group sets no
            ``tcp.congestion`` of its own; default: the scenario's ``tcp.congestion``
            (the simulator's ``bbr`` is Linux's BBR v1, ``tcp_bbr.c``).
        rfc: switch off the Linux behaviours the RFCs (and the simulator) do not have
            (RACK, tail loss probes, F-RTO, linear SYN timeouts) where a sysctl can (RACK
            stays on from Linux 6.17, whatever the sysctl says).

    Raises:
        ConfigError: a knob the testbed cannot honour is set, naming it and what it allows.
    """
    if congestion_control is None:
        congestion_control = scenario["tcp"]["congestion"]
    if congestion_control not in CONGESTION_CONTROLS:
        raise _config_error("congestion_control", repr(congestion_control), f"one of {', '.join(CONGESTION_CONTROLS)}")
    _check_link(scenario)
    per_group = _group_congestion(scenario, congestion_control)
    if scenario["trace_conn"] is not None:
        _refuse("trace_conn", scenario["trace_conn"], "unset: the testbed records TCP_INFO per slice, not every segment")
    if scenario["record_sender_epochs"]:
        _refuse("record_sender_epochs", True, "false: the testbed does not record the senders' per-slice state")
    tcp = scenario["tcp"]
    sysctls = _tcp_sysctls(tcp, rfc)
    common = [f"rto_min {round(tcp['min_rto_ms'])}ms"]
    if not tcp["delayed_ack"]:
        common.append("quickack 1")
    server_route = [*common, f"initcwnd {tcp['initial_window_pkts']}"]
    return LinuxSettings(
        sysctls=sysctls,
        client_route=common,
        server_route=server_route,
        mtu_bytes=tcp["packet_size_bytes"],
        congestion_control=per_group,
    )


def _group_congestion(scenario: Scenario, default: str) -> list[str]:
    """``TCP_CONGESTION`` per group: its ``[flows.tcp]`` congestion (a socket option, so it
    can differ per sender), else ``default``. Other per-group keys are host-wide sysctls or
    per-route attributes here; one that differs from ``[tcp]`` is refused."""
    tcp = scenario["tcp"]
    congestion = []
    for index, group in enumerate(scenario["flows"]):
        overrides = group.get("tcp") or {}
        for key, value in overrides.items():
            if key != "congestion" and value != tcp[key]:
                _refuse(f"flows[{index}].tcp.{key}", value,
                        f"{tcp[key]!r}, the scenario's tcp.{key}: per group the testbed sets only "
                        "congestion (TCP_CONGESTION per socket); the other knobs are per host or route")
        congestion.append(str(overrides.get("congestion", default)))
    return congestion
