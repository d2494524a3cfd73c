"""Refuse any socket connection that would leave this machine.

The test session installs :func:`install` in its own process, and (through
``tests/_site/sitecustomize.py`` on ``PYTHONPATH``) in every Python process it starts: CLI
subprocesses, multiprocessing workers, Ray workers. A refused connection raises
:class:`OffMachineConnection` where it happens and is appended to the file named by
``VLNVERSE_NETGUARD_LOG``, so a test fails even when the code under test swallows the error.
"""

from __future__ import annotations

import ipaddress
import os
import socket
import sys
from pathlib import Path
from typing import Any

LOG_ENV = "VLNVERSE_NETGUARD_LOG"
ALLOW_ENV = "VLNVERSE_NETGUARD_ALLOW"
LOCAL_NAMES = frozenset({"localhost", "localhost.localdomain", "ip6-localhost"})
RAY_CLOUD_PROBE = "169.254.169.254"
"""Ray's dashboard process asks this cloud-metadata address which cloud it runs on when it
starts, whatever the usage-stats switch says (Ray 2.60, ``usage_lib.get_cluster_config_to_report``).
The guard blocks it there like any other address but does not fail the test for it: the
project cannot turn it off (README, `--executor ray`)."""


class OffMachineConnection(ConnectionRefusedError):
    """A test tried to open a socket to an address off this machine."""


def is_local(family: int, address: Any) -> bool:
    """Whether connecting a socket of ``family`` to ``address`` stays on this machine.

    Unix sockets, netlink and the like are local; IP addresses must be loopback (or the
    unspecified address, which Linux connects to loopback); host names other than
    ``localhost`` are refused without resolving them.
    """
    if family not in (socket.AF_INET, socket.AF_INET6):
        return True
    host = address[0] if isinstance(address, tuple) else address
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    host = str(host).split("%", 1)[0]  # an IPv6 scope id
    if host.lower() in LOCAL_NAMES:
        return True
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return False
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    return ip.is_loopback or ip.is_unspecified


def allowed_hosts() -> set[str]:
    """Addresses a user allowed on purpose (the live LLM endpoint of ``llm_live`` tests)."""
    return set(filter(None, os.environ.get(ALLOW_ENV, "").split(",")))


def is_ray_cloud_probe(address: Any) -> bool:
    """Whether this is the Ray dashboard's cloud-metadata probe (see :data:`RAY_CLOUD_PROBE`)."""
    program = sys.argv[0] if sys.argv else ""
    return (isinstance(address, tuple) and address[0] == RAY_CLOUD_PROBE
            and program.endswith(os.path.join("ray", "dashboard", "dashboard.py")))


def refuse(family: int, address: Any) -> None:
    """Log and raise for an off-machine ``address``; do nothing for a local one."""
    if is_local(family, address) or (isinstance(address, tuple) and str(address[0]) in allowed_hosts()):
        return
    message = f"pid {os.getpid()} tried to connect to {address!r} (off this machine)"
    log = os.environ.get(LOG_ENV)
    if log and not is_ray_cloud_probe(address):
        with open(log, "a", encoding="utf-8") as stream:
            stream.write(message + "\n")
    raise OffMachineConnection(message)


def install() -> None:
    """Patch ``socket.socket``'s connect, connect_ex and sendto (idempotent)."""
    cls = socket.socket
    if getattr(cls, "_vlnverse_netguard", False):
        return
    connect, connect_ex, sendto = cls.connect, cls.connect_ex, cls.sendto

    def guarded_connect(self: socket.socket, address: Any) -> None:
        refuse(self.family, address)
        return connect(self, address)

    def guarded_connect_ex(self: socket.socket, address: Any) -> int:
        refuse(self.family, address)
        return connect_ex(self, address)

    def guarded_sendto(self: socket.socket, data: bytes, *args: Any) -> int:
        refuse(self.family, args[-1])  # sendto(data, address) or sendto(data, flags, address)
        return sendto(self, data, *args)

    cls.connect, cls.connect_ex, cls.sendto = guarded_connect, guarded_connect_ex, guarded_sendto
    cls._vlnverse_netguard = True


def violations() -> list[str]:
    """The refused connections logged so far by every guarded process."""
    log = os.environ.get(LOG_ENV)
    if not log or not Path(log).exists():
        return []
    return Path(log).read_text(encoding="utf-8").splitlines()


def clear() -> None:
    """Forget the logged refusals (after a test that provokes one on purpose)."""
    log = os.environ.get(LOG_ENV)
    if log:
        Path(log).write_text("", encoding="utf-8")
