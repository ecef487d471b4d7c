"""The cluster configuration: a full file, every validation error, write tokens, new files."""

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from archive.config import (
    MIN_SECRET_LENGTH,
    ClusterConfig,
    NodeEntry,
    load_config,
    new_config_text,
    parse_config,
    write_new_config,
    write_token,
)
from archive.errors import ConfigError
from archive.multicast import MulticastSettings

SECRET = "correct horse battery staple"

FULL = f"""\
cluster:
  name: production
  secret: "{SECRET}"
lookup: both
master: http://127.0.0.1:9000
multicast:
  group_base: 231.1.2.0
  port: 47900
  interface: 127.0.0.1
  ttl: 2
  wait_ms: 75
  join: held
nodes:
  - id: n1
    http: http://127.0.0.1:8101
    domain: eu
  - id: n2
    http: http://127.0.0.1:8102
"""

MINIMAL = f"cluster:\n  secret: {SECRET}\n"


def write(tmp_path: Path, text: str, name: str = "dlweb.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_full_file(tmp_path: Path) -> None:
    path = write(tmp_path, FULL)
    assert load_config(path) == ClusterConfig(
        name="production",
        secret=SECRET.encode(),
        lookup="both",
        multicast=MulticastSettings(
            group_base="231.1.2.0",
            port=47900,
            interface="127.0.0.1",
            ttl=2,
            wait=0.075,
            join="held",
        ),
        master="http://127.0.0.1:9000",
        nodes=(
            NodeEntry("n1", "http://127.0.0.1:8101", "eu"),
            NodeEntry("n2", "http://127.0.0.1:8102", "default"),
        ),
        source=str(path),
    )


def test_consultation_settings(tmp_path: Path) -> None:
    text = f"{MINIMAL}consultation:\n  allow: [10.1.0.0/16, '::1/128']\n  live: true\n"
    consultation = load_config(write(tmp_path, text)).consultation
    assert consultation.allow == ("10.1.0.0/16", "::1/128") and consultation.live
    assert consultation.auth is None
    default = load_config(write(tmp_path, MINIMAL)).consultation
    assert default.allow == ("127.0.0.0/8", "::1/128") and not default.live


def test_minimal_file_takes_the_defaults(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    config = load_config(path)
    assert config == ClusterConfig(name="dlweb", secret=SECRET.encode(), source=str(path))
    assert config.multicast == MulticastSettings()
    assert config.lookup == "multicast"
    assert config.master is None
    assert config.nodes == ()


def test_integer_wait_and_float_wait_are_both_read(tmp_path: Path) -> None:
    for text, wait in (("wait_ms: 250", 0.25), ("wait_ms: 2.5", 0.0025)):
        path = write(tmp_path, f"{MINIMAL}multicast:\n  {text}\n")
        assert load_config(path).multicast.wait == pytest.approx(wait)


@pytest.mark.parametrize(
    ("text", "fragments"),
    [
        ("cluster:\n  name: x\n", ["cluster.secret: is required"]),
        ("lookup: multicast\n", ["cluster.secret: is required"]),
        ("cluster:\n  secret: short\n", ["cluster.secret: must be at least 16 characters"]),
        ("cluster:\n  secret: 123456789012345678\n", ["cluster.secret: must be str, not int"]),
        (f"{MINIMAL}lookpu: both\n", ["lookpu: unknown key"]),
        (f"{MINIMAL}  colour: blue\n", ["cluster.colour: unknown key"]),
        (f"{MINIMAL}multicast:\n  prot: 47800\n", ["multicast.prot: unknown key"]),
        (f"{MINIMAL}multicast:\n  port: 47800\n  wait: 3\n", ["multicast.wait: unknown key"]),
        (f"cluster:\n  secret: {SECRET}\n  name: 5\n", ["cluster.name: must be str, not int"]),
        (f"{MINIMAL}multicast:\n  port: '47800'\n", ["multicast.port: must be int, not str"]),
        (f"{MINIMAL}multicast:\n  port: true\n", ["multicast.port: must be int, not bool"]),
        (f"{MINIMAL}multicast:\n  ttl: 1.5\n", ["multicast.ttl: must be int, not float"]),
        (f"{MINIMAL}multicast:\n  wait_ms: fast\n", ["multicast.wait_ms: must be float, not str"]),
        (f"{MINIMAL}multicast:\n  wait_ms: yes\n", ["multicast.wait_ms: must be float, not bool"]),
        (f"{MINIMAL}master: 5\n", ["master: must be str, not int"]),
        (f"{MINIMAL}proxy: ftp://x\n", ["proxy: must be an http:// or https:// URL"]),
        (
            f"{MINIMAL}consultation:\n  allow: [10.0.0.0/8, the office]\n",
            ["consultation.allow[1]: 'the office' is not a network"],
        ),
        (f"{MINIMAL}consultation:\n  live: maybe\n", ["consultation.live: must be bool"]),
        (f"{MINIMAL}consultation:\n  open: true\n", ["consultation.open: unknown key"]),
        (f"{MINIMAL}nodes:\n  n1: http://x\n", ["nodes: must be list, not dict"]),
        (
            f"{MINIMAL}lookup: gossip\n",
            ["lookup: must be one of multicast, master, both", "gossip"],
        ),
        (f"{MINIMAL}lookup: 3\n", ["lookup: must be str, not int"]),
        (
            f"{MINIMAL}multicast:\n  group_base: 230.0.0.1\n",
            [
                "multicast: ",
                "group_base '230.0.0.1' must be an IPv4 multicast address ending in .0",
            ],
        ),
        (
            f"{MINIMAL}multicast:\n  group_base: 10.1.2.0\n",
            ["multicast: ", "group_base '10.1.2.0' must be an IPv4 multicast address"],
        ),
        (
            f"{MINIMAL}multicast:\n  group_base: 224.0.0.0\n",
            ["multicast: ", "group_base '224.0.0.0' is the reserved"],
        ),
        (
            f"{MINIMAL}multicast:\n  group_base: nowhere\n",
            ["multicast: ", "group_base 'nowhere' is not an IPv4 address"],
        ),
        (
            f"{MINIMAL}multicast:\n  interface: 230.0.0.9\n",
            ["multicast: ", "interface '230.0.0.9' must be the address of a local interface"],
        ),
        (f"{MINIMAL}multicast:\n  port: 70000\n", ["multicast: ", "port 70000", "1 to 65535"]),
        (f"{MINIMAL}multicast:\n  ttl: 256\n", ["multicast: ", "ttl 256"]),
        (f"{MINIMAL}multicast:\n  wait_ms: 0\n", ["multicast: ", "wait 0.0"]),
        (f"{MINIMAL}multicast:\n  wait_ms: .nan\n", ["multicast: ", "wait nan"]),
        (f"{MINIMAL}multicast:\n  join: some\n", ["multicast: ", "join 'some'"]),
        ("- a\n- b\n", ["the file must be a mapping"]),
        ("", ["the file must be a mapping"]),
        ("just words\n", ["the file must be a mapping"]),
        ("cluster: 5\n", ["cluster must be a mapping"]),
        ("cluster:\n", ["cluster must be a mapping"]),
        (f"{MINIMAL}multicast: [1, 2]\n", ["multicast must be a mapping"]),
        (f"{MINIMAL}nodes:\n  - 5\n", ["nodes[0] must be a mapping"]),
        (
            f"{MINIMAL}nodes:\n  - id: a\n    http: http://a\n  - http: http://b\n",
            ["nodes[1].id: is required"],
        ),
        (f"{MINIMAL}nodes:\n  - id: a\n", ["nodes[0].http: is required"]),
        (
            f"{MINIMAL}nodes:\n  - id: 7\n    http: http://a\n",
            ["nodes[0].id: must be str, not int"],
        ),
        (
            f"{MINIMAL}nodes:\n  - id: a\n    http: http://a\n    port: 1\n",
            ["nodes[0].port: unknown key"],
        ),
    ],
)
def test_errors_name_the_file_and_the_key(tmp_path: Path, text: str, fragments: list[str]) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: ")
    for fragment in fragments:
        assert fragment in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "line"),
    [
        (f"cluster:\n  name: a\n\tsecret: {SECRET}\n", 3),
        (f"cluster:\n  name: x\n   secret: {SECRET}\n", 3),
        (f'{MINIMAL}lookup: "unclosed\nmaster: x\n', 5),
        (f"{MINIMAL}nodes: [\n", 4),
    ],
)
def test_bad_yaml_names_the_line(tmp_path: Path, text: str, line: int) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=f"not valid YAML at line {line}, column") as caught:
        load_config(path)
    assert str(caught.value).startswith(f"{path}: ")


def test_yaml_tags_are_not_executed(tmp_path: Path) -> None:
    path = write(tmp_path, f"{MINIMAL}master: !!python/object/apply:os.getcwd []\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "absent.yaml"
    with pytest.raises(ConfigError) as caught:
        load_config(path)
    assert str(caught.value) == f"{path}: cluster configuration file not found"


def test_unreadable_files(tmp_path: Path) -> None:
    binary = tmp_path / "binary.yaml"
    binary.write_bytes(b"cluster:\n  name: \xff\xfe\n")
    folder = tmp_path / "folder.yaml"
    folder.mkdir()
    for path in (binary, folder):
        with pytest.raises(ConfigError, match="cannot read the cluster configuration") as caught:
            load_config(path)
        assert str(caught.value).startswith(f"{path}: ")


def test_parse_config_names_its_source() -> None:
    with pytest.raises(ConfigError, match="^from the network: cluster.secret: is required$"):
        parse_config({"cluster": {}}, "from the network")
    assert parse_config({"cluster": {"secret": SECRET}}, "inline").source == "inline"


def test_write_token_is_stable_and_differs_per_secret() -> None:
    token = write_token(SECRET.encode())
    assert token == "10486db33744abbd89efc847116db59cffd931e90c131b9ee0bcc8d6c528bfd1"
    assert write_token(SECRET.encode()) == token
    assert write_token(b"another secret, also long") != token
    assert write_token(SECRET.encode() + b"!") != token
    assert SECRET not in token
    config = parse_config({"cluster": {"secret": SECRET}}, "inline")
    assert config.write_token == token


@pytest.fixture
def open_umask() -> Iterator[None]:
    """A permissive umask, so that the file mode seen is the one the code asked for."""
    previous = os.umask(0)
    yield
    os.umask(previous)


@pytest.mark.usefixtures("open_umask")
def test_write_new_config_creates_a_private_file_that_loads(tmp_path: Path) -> None:
    path = tmp_path / "new" / "dir" / "dlweb.yaml"
    write_new_config(path, name="lab", multicast_port=47999)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    config = load_config(path)
    assert config.name == "lab"
    assert config.multicast.port == 47999
    assert config.lookup == "multicast"
    assert len(config.secret) >= MIN_SECRET_LENGTH


def test_new_configs_get_different_secrets(tmp_path: Path) -> None:
    write_new_config(tmp_path / "a.yaml")
    write_new_config(tmp_path / "b.yaml")
    first, second = load_config(tmp_path / "a.yaml"), load_config(tmp_path / "b.yaml")
    assert first.secret != second.secret
    assert first.write_token != second.write_token
    assert first.name == second.name == "dlweb"
    assert first.multicast == MulticastSettings()


def test_write_new_config_refuses_to_overwrite(tmp_path: Path) -> None:
    path = write(tmp_path, MINIMAL)
    with pytest.raises(ConfigError, match="already exists") as caught:
        write_new_config(path)
    assert str(caught.value).startswith(f"{path}: ")
    assert path.read_text() == MINIMAL


def test_new_config_text_is_plain_yaml() -> None:
    data = yaml.safe_load(new_config_text("x", 40000))
    assert data["cluster"]["name"] == "x"
    assert data["multicast"]["port"] == 40000
    assert parse_config(data, "generated").name == "x"


def test_write_new_config_refuses_a_port_the_loader_refuses(tmp_path: Path) -> None:
    path = tmp_path / "dlweb.yaml"
    with pytest.raises(ConfigError, match="port"):
        write_new_config(path, multicast_port=70000)
    assert not path.exists()
