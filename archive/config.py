"""The cluster configuration: one YAML file per cluster, validated with messages naming the key."""

import hashlib
import hmac
import ipaddress
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from .atomic import atomic_write
from .errors import ConfigError
from .hip import Fields, HttpProxy, parse_proxy
from .metadata import parse_metadata_url
from .multicast import MulticastSettings
from .yaml_safe import safe_load

# The search index's folder, beside the cluster's folders, where the proxy looks for it; and
# where `dlweb search rebuild` and the indexer write it and the CDX API reads its URL-key index.
SEARCH_FOLDER = "search"
DEFAULT_SEARCH_INDEX = Path("dlweb-data") / SEARCH_FOLDER

LOOKUP_MODES = ("multicast", "master", "both")
# Reliability classes of a storage node's disks, most reliable first.
RELIABILITIES = ("high", "normal", "low")
MIN_SECRET_LENGTH = 16
_TOKEN_LABEL = b"dlweb write token v1"


@dataclass(frozen=True)
class NodeEntry:
    id: str
    http: str
    domain: str = "default"


@dataclass(frozen=True)
class Replication(Fields):
    """The replica policy's settings (docs/cluster.md); the master computes targets from them."""

    default: int = 2
    structure_extra: int = 1
    small_bytes: int = 1024
    small_extra: int = 1
    popular_refs: int = 100
    popular_extra: int = 1
    unreliable_extra: int = 1
    write_copies: int = 0  # copies an insert waits for; 0: min(2, default)

    @property
    def insert_copies(self) -> int:
        """The fsynced copies on distinct nodes an insert is acknowledged with."""
        return self.write_copies or min(2, self.default)


@dataclass(frozen=True)
class Consultation:
    """Who may use the consultation proxy, and what the operator lets clients do."""

    allow: tuple[str, ...] = ("127.0.0.0/8", "::1/128")  # client networks; others get 403
    live: bool = False  # whether a client may turn on the live web for pages the archive lacks
    auth: str | None = None  # an htpasswd file: clients then give a user name and password
    fuzzy_rules: str | None = None  # a YAML file of fuzzy-lookup rules beside the built-in ones
    # Private networks the live web may reach besides public addresses (an intranet's sites).
    live_networks: tuple[str, ...] = ()


@dataclass(frozen=True)
class HttpTimeouts:
    """How long the cluster's HTTP servers wait on a client (docs/cluster.md "HTTP limits"): a
    client that trickles a request's head, or keeps a connection open doing nothing, must not
    hold it for long."""

    head: float = 10.0  # seconds from a request's first byte until its whole head has arrived
    idle: float = 75.0  # seconds a kept-alive connection may wait for its next request


@dataclass(frozen=True)
class ClusterConfig:
    name: str
    secret: bytes
    lookup: str = "multicast"
    multicast: MulticastSettings = field(default_factory=MulticastSettings)
    master: str | None = None
    proxy: str | None = None  # the consultation proxy researchers set in their browser
    hip_proxy: HttpProxy | None = None  # the HTTP proxy agents reach the scheduler through
    nodes: tuple[NodeEntry, ...] = ()
    replication: Replication = field(default_factory=Replication)
    consultation: Consultation = field(default_factory=Consultation)
    http: HttpTimeouts = field(default_factory=HttpTimeouts)
    discovery: bool = True  # announce the master and scheduler on the LAN, find them there
    # Where the master keeps its metadata (archive.metadata): None for the SQLite file in its
    # data folder.
    metadata: str | None = None
    source: str = "<defaults>"

    @property
    def write_token(self) -> str:
        return write_token(self.secret)


def write_token(secret: bytes) -> str:
    """The bearer token for writes and deletes, derived so the secret itself never travels."""
    return hmac.new(secret, _TOKEN_LABEL, hashlib.sha256).hexdigest()


class _Section:
    """Reads one mapping of the YAML file, remembering where it is for error messages."""

    def __init__(self, data: object, where: str, source: str) -> None:
        if not isinstance(data, dict):
            raise ConfigError(
                f"{source}: {where or 'the file'} must be a mapping of keys to values"
            )
        self.data: dict[str, Any] = data
        self.where = where
        self.source = source
        self.used: set[str] = set()

    def _path(self, key: str) -> str:
        return f"{self.where}.{key}" if self.where else key

    def fail(self, key: str, message: str) -> ConfigError:
        return ConfigError(f"{self.source}: {self._path(key)}: {message}")

    def get(self, key: str, kind: type, default: Any = None, required: bool = False) -> Any:
        self.used.add(key)
        if key not in self.data:
            if required:
                raise self.fail(key, "is required")
            return default
        value = self.data[key]
        if kind is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.fail(key, f"must be {kind.__name__}, not {type(value).__name__}")
        return value

    def section(self, key: str) -> "_Section":
        self.used.add(key)
        return _Section(self.data.get(key, {}), self._path(key), self.source)

    def finish(self) -> None:
        """Refuse keys nobody read: a typo must not be silently ignored."""
        unknown = sorted(set(map(str, self.data)) - self.used)
        if unknown:
            raise self.fail(unknown[0], "unknown key")


def _multicast(section: _Section) -> MulticastSettings:
    defaults = MulticastSettings()
    wait_ms = section.get("wait_ms", float, defaults.wait * 1000)
    try:
        settings = MulticastSettings(
            group_base=section.get("group_base", str, defaults.group_base),
            port=section.get("port", int, defaults.port),
            interface=section.get("interface", str, defaults.interface),
            ttl=section.get("ttl", int, defaults.ttl),
            wait=wait_ms / 1000,
            join=section.get("join", str, defaults.join),
        )
    except ConfigError as exc:
        raise ConfigError(f"{section.source}: {section.where}: {exc}") from None
    section.finish()
    return settings


def _replication(section: _Section) -> Replication:
    defaults = Replication()
    values = {}
    for key in defaults.__dataclass_fields__:
        value = section.get(key, int, getattr(defaults, key))
        low = 1 if key in ("default", "popular_refs") else 0
        if not low <= value <= 1_000_000_000:
            raise section.fail(key, f"must be at least {low}")
        values[key] = value
    section.finish()
    return Replication(**values)


def _consultation(section: _Section) -> Consultation:
    defaults = Consultation()
    allow = _networks(section, "allow", defaults.allow)
    consultation = Consultation(
        allow=allow,
        live_networks=_networks(section, "live_networks", defaults.live_networks),
        live=section.get("live", bool, defaults.live),
        auth=section.get("auth", str, defaults.auth),
        fuzzy_rules=section.get("fuzzy_rules", str, defaults.fuzzy_rules),
    )
    section.finish()
    return consultation


def _networks(section: _Section, key: str, default: tuple[str, ...]) -> tuple[str, ...]:
    """A list of networks such as 10.0.0.0/8, each checked."""
    networks = section.get(key, list, list(default))
    for index, network in enumerate(networks):
        try:
            ipaddress.ip_network(str(network), strict=False)
        except ValueError:
            raise section.fail(
                f"{key}[{index}]", f"{str(network)[:60]!r} is not a network such as 10.0.0.0/8"
            ) from None
    return tuple(str(network) for network in networks)


def _http(section: _Section) -> HttpTimeouts:
    defaults = HttpTimeouts()
    seconds = {}
    for key, default in (("head_timeout", defaults.head), ("idle_timeout", defaults.idle)):
        value = section.get(key, float, default)
        if not 0 < value <= 86_400:
            raise section.fail(key, f"must be more than 0 and at most 86400 seconds, not {value:g}")
        seconds[key] = value
    section.finish()
    return HttpTimeouts(head=seconds["head_timeout"], idle=seconds["idle_timeout"])


def _hip_proxy(top: _Section) -> HttpProxy | None:
    url = top.get("hip_proxy", str)
    try:
        return None if url is None else parse_proxy(url)
    except ValueError as exc:
        raise top.fail("hip_proxy", str(exc)) from None


def _cluster(section: _Section) -> tuple[str, bytes]:
    """The cluster's name and secret."""
    name = section.get("name", str, "dlweb")
    secret = section.get("secret", str, required=True)
    if len(secret) < MIN_SECRET_LENGTH:
        raise section.fail("secret", f"must be at least {MIN_SECRET_LENGTH} characters")
    section.finish()
    return name, secret.encode("utf-8")


def _lookup(top: _Section) -> str:
    lookup: str = top.get("lookup", str, "multicast")
    if lookup not in LOOKUP_MODES:
        raise top.fail("lookup", f"must be one of {', '.join(LOOKUP_MODES)}, not {lookup!r}")
    return lookup


def _http_url(top: _Section, key: str) -> str | None:
    """The master's or the proxy's address, an http:// or https:// URL."""
    url: str | None = top.get(key, str)
    if url is not None and not url.startswith(("http://", "https://")):
        raise top.fail(key, f"must be an http:// or https:// URL, not {url[:100]!r}")
    return url


def _metadata(top: _Section) -> str | None:
    metadata: str | None = top.get("metadata", str)
    if metadata is not None:
        try:
            parse_metadata_url(metadata, "the URL")
        except ConfigError as error:
            raise top.fail("metadata", str(error)) from None
    return metadata


def _nodes(top: _Section) -> tuple[NodeEntry, ...]:
    """The storage nodes a static configuration lists, for lookup without multicast."""
    nodes = []
    for index, raw in enumerate(top.get("nodes", list, [])):
        entry = _Section(raw, f"nodes[{index}]", top.source)
        nodes.append(
            NodeEntry(
                id=entry.get("id", str, required=True),
                http=entry.get("http", str, required=True),
                domain=entry.get("domain", str, "default"),
            )
        )
        entry.finish()
    return tuple(nodes)


def parse_config(data: object, source: str) -> ClusterConfig:
    top = _Section(data, "", source)
    name, secret = _cluster(top.section("cluster"))
    config = ClusterConfig(
        name=name,
        secret=secret,
        lookup=_lookup(top),
        multicast=_multicast(top.section("multicast")),
        master=_http_url(top, "master"),
        proxy=_http_url(top, "proxy"),
        hip_proxy=_hip_proxy(top),
        discovery=top.get("discovery", bool, True),
        metadata=_metadata(top),
        replication=_replication(top.section("replication")),
        consultation=_consultation(top.section("consultation")),
        http=_http(top.section("http")),
        nodes=_nodes(top),
        source=source,
    )
    top.finish()
    return config


def load_config(path: Path) -> ClusterConfig:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"{path}: cluster configuration file not found") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot read the cluster configuration: {exc}") from None
    try:
        data = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ConfigError(f"{path}: not valid YAML{at}") from None
    return parse_config(data, str(path))


def new_config_text(
    name: str = "dlweb", multicast_port: int | None = None, extra: dict[str, Any] | None = None
) -> str:
    """A fresh cluster configuration with a generated secret; `extra` adds or replaces keys."""
    data: dict[str, Any] = {
        "cluster": {"name": name, "secret": secrets.token_urlsafe(32)},
        "lookup": "multicast",
        "multicast": {"group_base": MulticastSettings().group_base},
    }
    if multicast_port is not None:
        data["multicast"]["port"] = multicast_port
    data.update(extra or {})
    return yaml.safe_dump(data, sort_keys=False)


def write_new_config(
    path: Path,
    name: str = "dlweb",
    multicast_port: int | None = None,
    extra: dict[str, Any] | None = None,
) -> None:
    """Create a configuration file readable by its owner only; never overwrite one."""
    path = Path(path)
    if path.exists():
        raise ConfigError(f"{path}: already exists; refusing to replace a cluster secret")
    text = new_config_text(name, multicast_port, extra)
    parse_config(safe_load(text), str(path))
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write(path, text.encode(), replace=False)
