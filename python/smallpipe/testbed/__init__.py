"""The testbed: the simulator's scenarios on real Linux TCP in network namespaces,
through ``smallpipe-box`` (see docs/testbed.md).

Needs root, ``ip netns``, ``ethtool``, and the ``smallpipe-box`` and ``smallpipe-gen``
binaries (``cargo build --release -p smallpipe-middlebox -p smallpipe-trafficgen``).
"""

from smallpipe.testbed.knobs import LinuxSettings, linux_settings
from smallpipe.testbed.netns import NetnsError, Network, ip_netns_available
from smallpipe.testbed.runner import TestbedError, find_binary, run_testbed
from smallpipe.testbed.tables import link_window

__all__ = [
    "LinuxSettings",
    "NetnsError",
    "Network",
    "TestbedError",
    "find_binary",
    "ip_netns_available",
    "link_window",
    "linux_settings",
    "run_testbed",
]
