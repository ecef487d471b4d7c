"""LAN discovery with real zeroconf on loopback: announce, find, proofs, explicit addresses."""

import asyncio
import logging
import socket
import struct
import uuid
from dataclasses import replace
from pathlib import Path

import pytest

from archive.config import ClusterConfig, load_config
from archive.discovery import (
    MASTER,
    SCHEDULER,
    Announcement,
    DiscoveryError,
    address,
    find,
    proof,
)
from archive.errors import ConfigError
from deploy.testing.cluster import write_cluster_config
from deploy.testing.ports import free_port

MDNS = ("224.0.0.251", 5353)


def cluster_config(
    tmp_path: Path, name: str | None = None, extra: str = "", interface: str = "127.0.0.1"
) -> ClusterConfig:
    """A configuration with a fresh secret and a cluster name no other test uses."""
    path = tmp_path / f"{uuid.uuid4().hex}.yaml"
    write_cluster_config(path)
    text = path.read_text().replace("name: test", f"name: {name or 't-' + uuid.uuid4().hex[:12]}")
    text = text.replace("multicast:\n", f"multicast:\n  interface: {interface}\n")
    path.write_text(text + extra)
    return load_config(path)


class Capture(asyncio.DatagramProtocol):
    """Every mDNS packet on loopback, as a bystander on the LAN would receive them."""

    def __init__(self) -> None:
        self.packets: list[bytes] = []

    def datagram_received(self, data: bytes, addr: tuple[str, int]) -> None:
        self.packets.append(data)


async def capture() -> tuple[asyncio.DatagramTransport, Capture]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
    sock.bind(("", MDNS[1]))
    membership = struct.pack("4s4s", socket.inet_aton(MDNS[0]), socket.inet_aton("127.0.0.1"))
    sock.setsockopt(socket.IPPROTO_IP, socket.IP_ADD_MEMBERSHIP, membership)
    transport, protocol = await asyncio.get_running_loop().create_datagram_endpoint(
        Capture, sock=sock
    )
    return transport, protocol


async def test_an_announcement_is_found_with_its_url_and_gone_after_exit(tmp_path: Path) -> None:
    config = cluster_config(tmp_path)
    url = f"http://127.0.0.1:{free_port()}/cluster"
    async with Announcement(MASTER, config, url + "/") as announcement:
        assert await find(MASTER, config, timeout=10) == url
        assert announcement.announced == url
    with pytest.raises(DiscoveryError, match="no _dlweb-master._tcp of cluster"):
        await find(MASTER, config, timeout=1.5)


async def test_a_name_and_a_wildcard_host_are_announced_as_addresses(tmp_path: Path) -> None:
    config = cluster_config(tmp_path)
    port = free_port()
    async with Announcement(SCHEDULER, config, f"http://localhost:{port}"):
        assert await find(SCHEDULER, config, timeout=10) == f"http://127.0.0.1:{port}"
    async with Announcement(SCHEDULER, config, f"http://0.0.0.0:{port + 1}"):
        # multicast.interface (127.0.0.1 here) stands in for a host that means every address
        assert await find(SCHEDULER, config, timeout=10) == f"http://127.0.0.1:{port + 1}"


async def test_strangers_are_ignored_and_the_secret_never_sent(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """A forged announcement (our cluster name, another secret) and another cluster's are
    ignored; ours is found even though the forged URL sorts first."""
    ours = cluster_config(tmp_path)
    forger = cluster_config(tmp_path, name=ours.name)  # same cluster name, another secret
    neighbour = cluster_config(tmp_path)  # another cluster on the same LAN
    transport, packets = await capture()
    forged_port = free_port()
    try:
        async with (
            Announcement(MASTER, forger, f"http://127.0.0.1:{forged_port}"),
            Announcement(MASTER, neighbour, f"http://127.0.0.1:{free_port()}"),
        ):
            with (
                caplog.at_level(logging.WARNING, "archive.discovery"),
                pytest.raises(DiscoveryError) as failure,
            ):
                await address(MASTER, None, ours, "the key `master`", timeout=4)
            message = str(failure.value)
            assert f"no _dlweb-master._tcp of cluster {ours.name!r}" in message
            assert "within 4 s" in message and "give the key `master` to skip" in message
            assert f"127.0.0.1:{forged_port}" in caplog.text
            assert "proof does not verify" in caplog.text
            url = f"http://127.0.0.1:{forged_port + 1}"
            async with Announcement(MASTER, ours, url):
                assert await find(MASTER, ours, timeout=10) == url
    finally:
        transport.close()
    sent = b"".join(packets.packets)
    genuine = proof(ours.secret, MASTER, ours.name, url).encode()
    assert genuine in sent and b"_dlweb-master" in sent
    for config in (ours, forger, neighbour):
        assert config.secret not in sent
        assert config.write_token.encode() not in sent


async def test_an_explicit_address_wins_without_asking_the_network(tmp_path: Path) -> None:
    # No such interface here: any attempt at discovery with this configuration fails at once.
    config = cluster_config(tmp_path, interface="192.0.2.1")
    explicit = "http://192.0.2.7:8100/"
    assert await address(MASTER, explicit, config, "--master") == "http://192.0.2.7:8100"
    with pytest.raises(DiscoveryError, match="cannot use mDNS on interface 192.0.2.1"):
        await address(MASTER, None, config, "--master")


async def test_discovery_turned_off_neither_announces_nor_finds(tmp_path: Path) -> None:
    off = cluster_config(tmp_path, extra="discovery: false\n")
    assert off.discovery is False
    async with Announcement(MASTER, off, f"http://127.0.0.1:{free_port()}") as announcement:
        with pytest.raises(ConfigError, match="give --master, or turn discovery on"):
            await address(MASTER, None, off, "--master")
        with pytest.raises(DiscoveryError):
            await find(MASTER, replace(off, discovery=True), timeout=3)  # not announced
    assert announcement.announced is None


def test_the_discovery_key_must_be_a_boolean(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    write_cluster_config(path)
    path.write_text(path.read_text() + "discovery: maybe\n")
    with pytest.raises(ConfigError, match=r"dlweb.yaml: discovery: must be bool, not str"):
        load_config(path)
