"""The session's guard against traffic off the machine (tests/netguard.py) works in this
process and in the processes tests start."""

from __future__ import annotations

import socket
import subprocess
import sys
import threading

import pytest

from tests import netguard

OFF_MACHINE = ("192.0.2.1", 80)  # TEST-NET-1 (RFC 5737): never routed; refused before connecting anyway


@pytest.mark.parametrize(("family", "address", "local"), [
    (socket.AF_INET, ("127.0.0.1", 80), True),
    (socket.AF_INET, ("127.8.9.10", 80), True),
    (socket.AF_INET, ("localhost", 80), True),
    (socket.AF_INET, ("0.0.0.0", 80), True),
    (socket.AF_INET6, ("::1", 80, 0, 0), True),
    (socket.AF_INET6, ("::ffff:127.0.0.1", 80, 0, 0), True),
    (socket.AF_UNIX, "/tmp/some.sock", True),
    (socket.AF_INET, ("10.0.0.1", 80), False),
    (socket.AF_INET, ("169.254.169.254", 80), False),
    (socket.AF_INET, ("example.com", 443), False),
    (socket.AF_INET6, ("2001:db8::1", 80, 0, 0), False),
    (socket.AF_INET6, ("::ffff:8.8.8.8", 53, 0, 0), False),
])
def test_only_loopback_and_local_sockets_count_as_local(family, address, local):
    assert netguard.is_local(family, address) is local


def test_a_connection_off_the_machine_is_refused_and_logged():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        with pytest.raises(netguard.OffMachineConnection, match="192.0.2.1"):
            sock.connect(OFF_MACHINE)
        with pytest.raises(netguard.OffMachineConnection):
            sock.connect_ex(OFF_MACHINE)
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        with pytest.raises(netguard.OffMachineConnection):
            sock.sendto(b"x", OFF_MACHINE)
    assert len(netguard.violations()) == 3
    netguard.clear()  # provoked on purpose: this test must not fail for it


def test_a_child_process_is_guarded_too():
    code = f"import socket; socket.create_connection({OFF_MACHINE!r}, timeout=1)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode != 0
    assert "OffMachineConnection" in done.stderr
    assert any("192.0.2.1" in line for line in netguard.violations())
    netguard.clear()


def test_loopback_connections_work():
    server = socket.create_server(("127.0.0.1", 0))
    accepted = threading.Thread(target=lambda: server.accept()[0].close())
    accepted.start()
    with socket.create_connection(server.getsockname(), timeout=5):
        pass
    accepted.join(5)
    server.close()
    assert not netguard.violations()
