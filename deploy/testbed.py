"""A multi-host test bed on one Linux machine: network namespaces joined by a bridge.

`up` builds a LAN: a bridge in a namespace of its own (PREFIX-lan, so the machine's own network
is left untouched) and N host namespaces (PREFIX-h1, PREFIX-h2, ...), each joined to the bridge
by a veth pair: `eth0` in the host with the Nth address of the subnet, `hN` on the bridge. Every
host has `lo` up and a multicast route (224.0.0.0/4 dev eth0), and the bridge floods multicast
(snooping off), so lookups by multicast cross it. `cut` takes a host's bridge port down, as if
its cable were pulled; `restore` plugs it back. Everything goes through iproute2's `ip`.

    python -m deploy.testbed up --hosts 5
    python -m deploy.testbed exec h2 -- python -m storage_node ...
    python -m deploy.testbed status
    python -m deploy.testbed down
"""

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from archive.command_line import argument_type, counting_to, run
from archive.errors import DlwebError

DEFAULT_PREFIX = "dlwebtb"
DEFAULT_HOSTS = 5
DEFAULT_SUBNET = "10.77.0.0/24"
MAX_HOSTS = 32
BRIDGE = "br0"
HOST_LINK = "eth0"
MULTICAST = "224.0.0.0/4"
IP_TIMEOUT = 30.0
STOP_TIMEOUT = 10.0
_PREFIX = re.compile(r"[a-z][a-z0-9-]{0,23}")


class LanError(DlwebError):
    """The test bed could not be built, used or removed as asked."""


class LanUnavailable(LanError):
    """This machine cannot have a test bed: no `ip` command, or no right to make namespaces."""


def check_prefix(prefix: str) -> str:
    if not _PREFIX.fullmatch(prefix):
        raise LanError(
            f"test bed prefix {prefix[:60]!r} must be 1 to 24 lowercase letters, digits or '-',"
            " starting with a letter"
        )
    return prefix


def check_hosts(hosts: int) -> int:
    if not 1 <= hosts <= MAX_HOSTS:
        raise LanError(f"a test bed has 1 to {MAX_HOSTS} hosts, not {hosts}")
    return hosts


def check_subnet(subnet: str, hosts: int) -> ipaddress.IPv4Network:
    """The hosts' network: IPv4, private, with an address for each host."""
    try:
        network = ipaddress.IPv4Network(subnet, strict=True)
    except ValueError as exc:
        raise LanError(f"test bed subnet {subnet[:60]!r} is not an IPv4 network: {exc}") from None
    if not network.is_private or network.is_loopback:
        raise LanError(f"test bed subnet {subnet} must be a private network such as 10.77.0.0/24")
    if network.num_addresses - 2 < hosts:
        raise LanError(f"test bed subnet {subnet} has no room for {hosts} hosts")
    return network


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run `ip ARGS`; a failure is a LanError naming the command and what ip said."""
    try:
        done = subprocess.run(
            ["ip", *args], capture_output=True, text=True, timeout=IP_TIMEOUT, check=False
        )
    except FileNotFoundError:
        raise LanUnavailable(
            "the test bed needs the ip command of iproute2 (apt-get install iproute2)"
        ) from None
    except subprocess.TimeoutExpired:
        raise LanError(f"ip {' '.join(args)} did not finish in {IP_TIMEOUT:g} s") from None
    if check and done.returncode != 0:
        raise LanError(f"ip {' '.join(args)} failed: {done.stderr.strip() or done.returncode}")
    return done


def namespaces() -> list[str]:
    """The names of the machine's network namespaces."""
    listed = _ip("-json", "netns", "list").stdout.strip()
    return [str(item["name"]) for item in json.loads(listed or "[]")]


@dataclass(frozen=True)
class Lan:
    """A test bed: its namespaces' prefix, its number of hosts and their subnet."""

    prefix: str = DEFAULT_PREFIX
    hosts: int = DEFAULT_HOSTS
    subnet: str = DEFAULT_SUBNET

    def __post_init__(self) -> None:
        check_prefix(self.prefix)
        check_subnet(self.subnet, check_hosts(self.hosts))

    @property
    def lan(self) -> str:
        """The namespace that holds the bridge."""
        return f"{self.prefix}-lan"

    def namespace(self, host: int) -> str:
        return f"{self.prefix}-h{self._check(host)}"

    def address(self, host: int) -> str:
        """The host's IPv4 address: the subnet's Nth address."""
        return str(ipaddress.IPv4Network(self.subnet)[self._check(host)])

    def port(self, host: int) -> str:
        """The host's port on the bridge (a veth in the LAN namespace)."""
        return f"h{self._check(host)}"

    def _check(self, host: int) -> int:
        if not 1 <= host <= self.hosts:
            raise LanError(f"the test bed {self.prefix} has hosts 1 to {self.hosts}, not {host}")
        return host

    # -- building and removing -----------------------------------------------------------------

    def up(self) -> None:
        """Build the LAN; on any failure, remove what was built and raise LanError."""
        if shutil.which("ip") is None:
            raise LanUnavailable(
                "the test bed needs the ip command of iproute2 (apt-get install iproute2)"
            )
        existing = [name for name in namespaces() if _ours(name, self.prefix)]
        if existing:
            raise LanError(
                f"a test bed {self.prefix} exists already ({', '.join(sorted(existing))});"
                f" remove it with: python -m deploy.testbed down --prefix {self.prefix}"
            )
        made = _ip("netns", "add", self.lan, check=False)
        if made.returncode != 0:
            raise LanUnavailable(
                f"cannot create the network namespace {self.lan}: {made.stderr.strip()}"
                " (the test bed needs root, or CAP_SYS_ADMIN and CAP_NET_ADMIN)"
            )
        try:
            self._build()
        except BaseException:
            down(self.prefix)
            raise

    def _build(self) -> None:
        lan = self.lan
        _ip("-n", lan, "link", "set", "lo", "up")
        _ip("-n", lan, "link", "add", BRIDGE, "type", "bridge", "mcast_snooping", "0")
        _ip("-n", lan, "link", "set", BRIDGE, "up")
        length = ipaddress.IPv4Network(self.subnet).prefixlen
        for host in range(1, self.hosts + 1):
            name, port = self.namespace(host), self.port(host)
            _ip("netns", "add", name)
            _ip("-n", lan, "link", "add", port, "type", "veth", "peer", HOST_LINK, "netns", name)
            _ip("-n", lan, "link", "set", port, "master", BRIDGE, "up")
            _ip("-n", name, "link", "set", "lo", "up")
            _ip("-n", name, "addr", "add", f"{self.address(host)}/{length}", "dev", HOST_LINK)
            _ip("-n", name, "link", "set", HOST_LINK, "up")
            _ip("-n", name, "route", "add", MULTICAST, "dev", HOST_LINK)

    # -- using the hosts -----------------------------------------------------------------------

    def popen(self, host: int, argv: list[str], **options: Any) -> "subprocess.Popen[Any]":
        """Start argv in the host's namespace (`ip netns exec`, which execs it: same pid)."""
        if not argv:
            raise LanError("no command given to run in the test bed")
        return subprocess.Popen(["ip", "netns", "exec", self.namespace(host), *argv], **options)

    def run(
        self, host: int, argv: list[str], timeout: float = 60, **options: Any
    ) -> subprocess.CompletedProcess[str]:
        """Run argv in the host's namespace to its end; its output as text. `options` go to
        Popen (cwd, env...)."""
        process = self.popen(
            host, argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **options
        )
        try:
            out, err = process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
            raise LanError(
                f"{' '.join(argv)} in host {host} did not finish in {timeout:g} s"
            ) from None
        return subprocess.CompletedProcess(process.args, process.returncode, out, err)

    def cut(self, host: int) -> None:
        """Pull the host's cable: its port on the bridge goes down."""
        _ip("-n", self.lan, "link", "set", self.port(host), "down")

    def restore(self, host: int) -> None:
        """Plug the host's cable back."""
        _ip("-n", self.lan, "link", "set", self.port(host), "up")

    def linked(self, host: int) -> bool:
        """Whether the host's port on the bridge is up."""
        shown = _ip("-json", "-n", self.lan, "link", "show", self.port(host)).stdout
        return "UP" in json.loads(shown)[0].get("flags", [])


def _ours(name: str, prefix: str) -> bool:
    return name == f"{prefix}-lan" or re.fullmatch(rf"{re.escape(prefix)}-h\d+", name) is not None


def find(prefix: str = DEFAULT_PREFIX) -> Lan:
    """The test bed built with this prefix, from its namespaces."""
    check_prefix(prefix)
    names = set(namespaces())
    if f"{prefix}-lan" not in names:
        raise LanError(
            f"there is no test bed {prefix}; build one with: python -m deploy.testbed up"
            f" --prefix {prefix}"
        )
    hosts = 0
    while f"{prefix}-h{hosts + 1}" in names:
        hosts += 1
    if hosts == 0:
        raise LanError(
            f"the test bed {prefix} has no hosts; remove it with down and build it again"
        )
    shown = _ip("-json", "-n", f"{prefix}-h1", "addr", "show", "dev", HOST_LINK).stdout
    found = [a for a in json.loads(shown)[0].get("addr_info", []) if a.get("family") == "inet"]
    if not found:
        raise LanError(f"host 1 of the test bed {prefix} has no IPv4 address on {HOST_LINK}")
    subnet = ipaddress.IPv4Interface(f"{found[0]['local']}/{found[0]['prefixlen']}").network
    return Lan(prefix, hosts, str(subnet))


def _host_order(name: str) -> int:
    """The LAN namespace first, then the hosts in order."""
    number = name.rpartition("-h")[2]
    return int(number) if number.isdigit() else 0


def down(prefix: str = DEFAULT_PREFIX) -> list[str]:
    """Stop what still runs in the test bed's namespaces and remove them; the names removed."""
    check_prefix(prefix)
    names = sorted((n for n in namespaces() if _ours(n, prefix)), key=_host_order)
    pids = [pid for name in names for pid in _pids(name)]
    _stop(pids)
    for name in reversed(names):
        _ip("netns", "delete", name)
    return names


def _pids(namespace: str) -> list[int]:
    listed = _ip("netns", "pids", namespace, check=False).stdout.split()
    return [int(pid) for pid in listed if pid.isdigit() and int(pid) != os.getpid()]


def _stop(pids: list[int]) -> None:
    """SIGTERM, then SIGKILL what is left after STOP_TIMEOUT seconds."""
    for sig, wait in ((signal.SIGTERM, STOP_TIMEOUT), (signal.SIGKILL, STOP_TIMEOUT)):
        for pid in pids:
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                continue
        deadline = time.monotonic() + wait
        while (pids := [p for p in pids if _exists(p)]) and time.monotonic() < deadline:
            time.sleep(0.05)
        if not pids:
            return


def _exists(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rpartition(")")[2].split()[:1] != ["Z"]


def status(lan: Lan) -> list[dict[str, Any]]:
    """Each host: its namespace, address and whether its link is up."""
    return [
        {
            "host": f"h{host}",
            "namespace": lan.namespace(host),
            "address": lan.address(host),
            "link": "up" if lan.linked(host) else "cut",
        }
        for host in range(1, lan.hosts + 1)
    ]


# -- the command ---------------------------------------------------------------------------------


def _host_number(text: str) -> int:
    number = text[1:] if text.startswith("h") else text
    if not number.isdigit() or not 1 <= int(number) <= MAX_HOSTS:
        raise argparse.ArgumentTypeError(f"{text!r} is not a host such as h2 or 2")
    return int(number)


def _up(args: argparse.Namespace) -> int:
    lan = Lan(args.prefix, args.hosts, args.subnet)
    lan.up()
    for line in status(lan):
        print(f"{line['host']}  {line['address']:15}  ip netns exec {line['namespace']} ...")
    print(f"remove it with: python -m deploy.testbed down --prefix {lan.prefix}")
    return 0


def _down(args: argparse.Namespace) -> int:
    removed = down(args.prefix)
    print(f"removed {', '.join(removed)}" if removed else f"there is no test bed {args.prefix}")
    return 0


def _status(args: argparse.Namespace) -> int:
    lines = status(find(args.prefix))
    if args.json:
        print(json.dumps(lines, indent=2))
    for line in [] if args.json else lines:
        print(f"{line['host']}  {line['address']:15}  {line['namespace']}  link {line['link']}")
    return 0


def _exec(args: argparse.Namespace) -> int:
    command = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not command:
        raise LanError("exec: give the command after --, as in: exec h2 -- ip addr")
    try:
        return find(args.prefix).popen(args.host, command).wait()
    except KeyboardInterrupt:
        return 130


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m deploy.testbed",
        description="A LAN of network namespaces joined by a bridge, one namespace per host.",
    )
    parser.add_argument(
        "--prefix",
        type=argument_type(check_prefix, LanError),
        default=DEFAULT_PREFIX,
        help=f"names of the namespaces: PREFIX-lan, PREFIX-h1, ... (default {DEFAULT_PREFIX})",
    )
    actions = parser.add_subparsers(dest="action", required=True, metavar="ACTION")
    start = actions.add_parser("up", help="build the LAN and its hosts")
    start.add_argument(
        "--hosts",
        type=counting_to(MAX_HOSTS),
        default=DEFAULT_HOSTS,
        help=f"hosts (default {DEFAULT_HOSTS})",
    )
    start.add_argument(
        "--subnet", default=DEFAULT_SUBNET, help=f"the hosts' network (default {DEFAULT_SUBNET})"
    )
    start.set_defaults(run=_up)
    actions.add_parser("down", help="stop what runs in it and remove it").set_defaults(run=_down)
    show = actions.add_parser("status", help="its hosts, addresses and links")
    show.add_argument("--json", action="store_true", help="as JSON")
    show.set_defaults(run=_status)
    execute = actions.add_parser("exec", help="run a command in a host: exec h2 -- CMD ...")
    execute.add_argument("host", type=_host_number, help="h1, h2, ... or 1, 2, ...")
    execute.add_argument("argv", nargs=argparse.REMAINDER, help="-- then the command")
    execute.set_defaults(run=_exec)
    return parser


def main() -> int:
    return run(build_parser())


if __name__ == "__main__":
    sys.exit(main())
