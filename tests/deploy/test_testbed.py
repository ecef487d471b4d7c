"""The multi-host test bed itself: hosts on one LAN, multicast across the bridge, a link cut and
restored, everything removed by down, and clear errors for bad arguments."""

import json
import os
import subprocess
import sys

from deploy.testbed import Lan, down, namespaces
from tests.deploy.testbed_fixtures import (  # noqa: F401  (lan_fixture: a fixture used here)
    ROOT,
    lan_fixture,
    make_lan,
)

PORT = 47999
RECEIVE = (
    "import socket, sys\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    f"s.bind(('0.0.0.0', {PORT}))\n"
    "s.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP,"
    " socket.inet_aton('230.9.9.9') + socket.inet_aton('0.0.0.0'))\n"
    "print('ready', flush=True)\n"
    "s.settimeout(20)\n"
    "data, sender = s.recvfrom(100)\n"
    "print(data.decode(), sender[0], flush=True)\n"
)
SEND = (
    "import socket\n"
    "s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
    f"s.sendto(b'hello', ('230.9.9.9', {PORT}))\n"
)
SERVE = (
    "import socket\n"
    f"s = socket.create_server(('0.0.0.0', {PORT}))\n"
    "print('ready', flush=True)\n"
    "while True:\n"
    "    s.accept()[0].close()\n"
)


def connects(lan: Lan, host: int, to: int) -> bool:
    """Whether a TCP connection from one host to another's port succeeds within a second."""
    probe = f"import socket; socket.create_connection(('{lan.address(to)}', {PORT}), timeout=1)"
    return lan.run(host, [sys.executable, "-c", probe]).returncode == 0


def run_testbed(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deploy.testbed", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env=env,
        timeout=60,
    )


def test_hosts_have_their_addresses_and_multicast_crosses_the_bridge(lan: Lan) -> None:
    shown = lan.run(2, ["ip", "-json", "addr", "show", "dev", "eth0"])
    assert shown.returncode == 0, shown.stderr
    addresses = [a["local"] for a in json.loads(shown.stdout)[0]["addr_info"]]
    assert lan.address(2) in addresses
    receiver = lan.popen(3, [sys.executable, "-c", RECEIVE], stdout=subprocess.PIPE, text=True)
    try:
        assert receiver.stdout is not None and receiver.stdout.readline() == "ready\n"
        assert lan.run(1, [sys.executable, "-c", SEND]).returncode == 0
        out, _ = receiver.communicate(timeout=30)
    finally:
        receiver.kill()
        receiver.wait()
    assert out.split() == ["hello", lan.address(1)]


def test_a_cut_link_isolates_its_host_until_restored(lan: Lan) -> None:
    servers = [
        lan.popen(host, [sys.executable, "-c", SERVE], stdout=subprocess.PIPE, text=True)
        for host in (2, 3)
    ]
    try:
        for server in servers:
            assert server.stdout is not None and server.stdout.readline() == "ready\n"
        assert connects(lan, 1, 2)
        lan.cut(2)
        assert not lan.linked(2)
        assert not connects(lan, 1, 2)
        assert connects(lan, 1, 3)
        status = json.loads(run_testbed("--prefix", lan.prefix, "status", "--json").stdout)
        assert [host["link"] for host in status] == ["up", "cut", "up"]
        lan.restore(2)
        assert lan.linked(2)
        assert connects(lan, 1, 2)
    finally:
        for server in servers:
            server.kill()
            server.wait()


def test_down_stops_what_runs_in_the_hosts_and_removes_them() -> None:
    lan = make_lan(2)
    try:
        done = run_testbed("--prefix", lan.prefix, "exec", "h2", "--", "ip", "-br", "addr")
        assert done.returncode == 0 and lan.address(2) in done.stdout
        sleeper = lan.popen(1, ["sleep", "600"])
        removed = run_testbed("--prefix", lan.prefix, "down")
        assert removed.returncode == 0, removed.stderr
        assert sleeper.wait(timeout=30) != 0
        assert not [name for name in namespaces() if name.startswith(f"{lan.prefix}-")]
    finally:
        down(lan.prefix)


def test_bad_arguments_get_one_line_errors() -> None:
    cases = [
        (["up", "--hosts", "40"], "must be a whole number from 1 to 32"),
        (["--prefix", "No Good", "up"], "must be 1 to 24 lowercase letters"),
        (["--prefix", "dltbad", "up", "--subnet", "8.8.8.0/24"], "must be a private network"),
        (["--prefix", "dltbad", "up", "--subnet", "10.1.0.0/30", "--hosts", "3"], "no room"),
        (["--prefix", "dltbad", "status"], "there is no test bed dltbad"),
        (["--prefix", "dltbad", "exec", "hx", "--", "true"], "is not a host such as h2"),
    ]
    for args, message in cases:
        done = run_testbed(*args)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert message in done.stderr and "Traceback" not in done.stderr, (args, done.stderr)
    assert not [name for name in namespaces() if name.startswith("dltbad-")]


def test_without_the_ip_command_the_error_says_what_to_install() -> None:
    done = run_testbed("--prefix", "dltnoip", "up", env={**os.environ, "PATH": ""})
    assert done.returncode == 2
    assert "needs the ip command of iproute2" in done.stderr, done.stderr
