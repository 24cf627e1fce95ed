"""The testbed's network: three namespaces joined by two veth pairs, torn down whatever happens.

::

    clients ns                 box ns                      servers ns
    vc (198.18.0.u+1/32 ...) ─ bc  [smallpipe-box]  bs ─ vs (198.19.0.1/32)
            IF_A = bc faces the clients, IF_B = bs the servers

The box forwards frames at layer 2, so each host reaches the other side through a static
neighbour (a gateway address that resolves to the far host's MAC); nothing in the box's
namespace routes. Offloads (checksums, TSO, GSO, GRO) are off on all four veth ends, so
the box sees wire-sized frames. Every command runs under a time limit.

Namespaces are named ``sp{pid}{4 hex digits}-{clients,box,servers}``. A process killed
before its teardown (SIGKILL, a machine stopped mid-run) leaves its three behind; the next
network built removes those whose process is gone (:func:`sweep_stale_namespaces`).
"""

from __future__ import annotations

import ipaddress
import os
import re
import secrets
import shutil
import signal
import subprocess
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from types import FrameType, TracebackType
from typing import Self

__all__ = ["CLIENT_MAC", "LOSS_PROBE_COUNTERS", "SERVER_ADDR", "NetnsError", "Network", "client_addr",
           "ip_netns_available", "parse_nstat", "sweep_stale_namespaces"]

SERVER_ADDR = "198.19.0.1"
CLIENT_NET = ipaddress.IPv4Address("198.18.0.0")
# Gateways: addresses no host has, resolved by a permanent neighbour to the far host's MAC.
CLIENT_GATEWAY = "198.19.255.254"  # the clients' way to 198.19.0.0/16
SERVER_GATEWAY = "198.18.255.254"  # the servers' way to 198.18.0.0/16
CLIENT_MAC = "02:73:70:00:00:01"
SERVER_MAC = "02:73:70:00:00:02"
COMMAND_TIMEOUT_S = 30.0
# Network's names: the creating process's pid, then a random tag of four hex digits.
LOSS_PROBE_COUNTERS = ("TcpExtTCPLossProbes", "TcpExtTCPLossProbeRecovery")
"""Linux's tail-loss-probe counters (``LINUX_MIB_TCPLOSSPROBES``: a probe sent by
``tcp_send_loss_probe``; ``LINUX_MIB_TCPLOSSPROBERECOVERY``: a loss the probe repaired,
``tcp_process_tlp_ack``). Per network namespace, not per socket."""
_OUR_NAME = re.compile(r"sp(?P<pid>[0-9]+)[0-9a-f]{4}-(clients|box|servers)")


class NetnsError(RuntimeError):
    """A namespace could not be built (not root, no ``ip netns``, a command failed)."""


def client_addr(unit_id: int) -> str:
    """The client-side address of a unit (the simulator's numbering: unit ``u`` is ``.u+1``)."""
    return str(CLIENT_NET + unit_id + 1)


def ip_netns_available() -> tuple[bool, str]:
    """Whether this process can build namespaces, and why not."""
    if os.geteuid() != 0:
        return False, "the testbed needs root (network namespaces)"
    if shutil.which("ethtool") is None:
        return False, "the testbed needs ethtool to turn the veth offloads off (apt-get install ethtool)"
    try:
        subprocess.run(["ip", "netns", "list"], check=True, capture_output=True, timeout=COMMAND_TIMEOUT_S)
    except (OSError, subprocess.SubprocessError) as error:
        return False, f"`ip netns` is unavailable: {error}"
    return True, ""


def parse_nstat(text: str) -> dict[str, int]:
    """The counters of ``nstat -a`` output: a ``#kernel`` line, then ``Name value rate`` per
    counter; comment lines are skipped.

    Raises:
        NetnsError: a line is not ``Name value rate`` with a whole-number value.
    """
    counters = {}
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        fields = line.split()
        if len(fields) != 3 or not fields[1].isdigit():
            raise NetnsError(f"nstat output: {line!r} is not a counter line (name, whole value, rate)")
        counters[fields[0]] = int(fields[1])
    return counters


def _run(args: Sequence[str], stdin: str | None = None) -> str:
    try:
        done = subprocess.run(list(args), input=stdin, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as error:
        raise NetnsError(f"{' '.join(args)}: {error}") from None
    if done.returncode != 0:
        raise NetnsError(f"{' '.join(args)}: {done.stderr.strip()}")
    return done.stdout


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's process
    return True


def sweep_stale_namespaces() -> list[str]:
    """Delete the testbed namespaces whose creating process no longer runs; returns their names.

    Namespaces of a live process are left alone, whoever made them: a pid reused since can only
    keep a stale namespace, never remove a live one.
    """
    listing = _run(["ip", "netns", "list"])
    stale = [name for name in (line.split()[0] for line in listing.splitlines() if line.strip())
             if (match := _OUR_NAME.fullmatch(name)) and not _process_exists(int(match["pid"]))]
    for name in stale:
        _run(["ip", "netns", "del", name])
    return stale


@dataclass(frozen=True)
class Names:
    clients: str
    box: str
    servers: str

    def all(self) -> tuple[str, str, str]:
        return self.clients, self.box, self.servers


class Network:
    """Context manager: builds the namespaces on entry, deletes them on exit.

    SIGINT and SIGTERM received inside the ``with`` block raise (``KeyboardInterrupt``,
    ``SystemExit``) so the teardown runs; the previous handlers come back on exit.

    Arguments:
        unit_count: client addresses to add (one per unit).
        mtu_bytes: MTU of every veth (the scenario's ``packet_size_bytes``).
        sysctls: set in both host namespaces.
        client_route, server_route: ``ip route`` attributes towards the other side.
    """

    IF_CLIENT, IF_A, IF_B, IF_SERVER = "vc", "bc", "bs", "vs"

    def __init__(self, unit_count: int, mtu_bytes: int, sysctls: dict[str, str],
                 client_route: Iterable[str], server_route: Iterable[str]) -> None:
        tag = f"sp{os.getpid()}{secrets.token_hex(2)}"
        self.names = Names(f"{tag}-clients", f"{tag}-box", f"{tag}-servers")
        self.unit_count = unit_count
        self.mtu_bytes = mtu_bytes
        self.sysctls = dict(sysctls)
        self.client_route = list(client_route)
        self.server_route = list(server_route)
        self._created: list[str] = []
        self._previous: dict[int, object] = {}
        # Namespaces left by dead testbed processes, removed before this network was built.
        self.swept: list[str] = []

    def __enter__(self) -> Self:
        for signum in (signal.SIGINT, signal.SIGTERM):
            self._previous[signum] = signal.signal(signum, self._on_signal)
        try:
            self._build()
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        try:
            self.teardown()
        finally:
            for signum, handler in self._previous.items():
                signal.signal(signum, handler)  # type: ignore[arg-type]
            self._previous.clear()

    @staticmethod
    def _on_signal(signum: int, frame: FrameType | None) -> None:
        if signum == signal.SIGINT:
            raise KeyboardInterrupt
        raise SystemExit(128 + signum)

    def exec_prefix(self, namespace: str) -> list[str]:
        """The command prefix that runs a program inside ``namespace``."""
        return ["ip", "netns", "exec", namespace]

    def teardown(self) -> None:
        """Delete every namespace this object created (their veths go with them)."""
        errors = []
        while self._created:
            name = self._created.pop()
            try:
                _run(["ip", "netns", "del", name])
            except NetnsError as error:
                errors.append(str(error))
        if errors:
            raise NetnsError("; ".join(errors))

    def _build(self) -> None:
        available, why_not = ip_netns_available()
        if not available:
            raise NetnsError(why_not)  # before anything is made, not halfway through
        self.swept = sweep_stale_namespaces()
        n = self.names
        for name in n.all():
            _run(["ip", "netns", "add", name])
            self._created.append(name)
            _run(["ip", "-n", name, "link", "set", "lo", "up"])
        _run(["ip", "link", "add", self.IF_CLIENT, "netns", n.clients, "address", CLIENT_MAC, "type", "veth",
              "peer", "name", self.IF_A, "netns", n.box])
        _run(["ip", "link", "add", self.IF_SERVER, "netns", n.servers, "address", SERVER_MAC, "type", "veth",
              "peer", "name", self.IF_B, "netns", n.box])
        for name, dev in ((n.clients, self.IF_CLIENT), (n.box, self.IF_A), (n.box, self.IF_B), (n.servers, self.IF_SERVER)):
            _run(["ip", "-n", name, "link", "set", dev, "mtu", str(self.mtu_bytes), "up"])
            _run([*self.exec_prefix(name), "ethtool", "-K", dev, "rx", "off", "tx", "off", "tso", "off",
                  "gso", "off", "gro", "off"])
        # The box only forwards frames; it must not answer or route anything itself.
        _run([*self.exec_prefix(n.box), "sysctl", "-q", "-w", "net.ipv4.ip_forward=0",
              "net.ipv6.conf.all.disable_ipv6=1"])
        settings = [f"{key}={value}" for key, value in self.sysctls.items()]
        for name in (n.clients, n.servers):
            _run([*self.exec_prefix(name), "sysctl", "-q", "-w", "net.ipv6.conf.all.disable_ipv6=1", *settings])
        batch = "".join(f"address add {client_addr(u)}/32 dev {self.IF_CLIENT}\n" for u in range(self.unit_count))
        _run(["ip", "-n", n.clients, "-batch", "-"], stdin=batch)
        _run(["ip", "-n", n.servers, "address", "add", f"{SERVER_ADDR}/32", "dev", self.IF_SERVER])
        for name, dev, gateway, mac, net, attrs in (
            (n.clients, self.IF_CLIENT, CLIENT_GATEWAY, SERVER_MAC, "198.19.0.0/16", self.client_route),
            (n.servers, self.IF_SERVER, SERVER_GATEWAY, CLIENT_MAC, "198.18.0.0/16", self.server_route),
        ):
            _run(["ip", "-n", name, "neigh", "add", gateway, "lladdr", mac, "dev", dev, "nud", "permanent"])
            route = ["ip", "-n", name, "route", "add", net, "via", gateway, "dev", dev, "onlink"]
            _run([*route, *" ".join(attrs).split()])

    def read_counters(self, namespace: str) -> dict[str, int]:
        """The kernel's SNMP and TcpExt counters of one namespace (``nstat -asz``: absolute
        values, zeros kept, nstat's history file left alone)."""
        return parse_nstat(_run([*self.exec_prefix(namespace), "nstat", "-asz"]))

    def read_sysctl(self, namespace: str, key: str) -> str:
        """A sysctl's value inside one of the namespaces."""
        return _run([*self.exec_prefix(namespace), "sysctl", "-n", key]).strip()
