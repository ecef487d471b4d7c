"""Where a metadata store lives, named by a URL (a path or sqlite:///path for SQLite,
postgresql://user:password@host:port/database for PostgreSQL), and which cluster a database
belongs to, so that a process pointed at another cluster's database refuses it at start."""

import hashlib
import hmac
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import unquote, urlsplit

from .errors import ConfigError, DlwebError, clipped

ENGINES = ("sqlite", "postgresql")
_SCHEMES = {"sqlite": "sqlite", "postgresql": "postgresql", "postgres": "postgresql"}
_FORMS = "a path, sqlite:///path or postgresql://user:password@host:port/database"
_CLUSTER_LABEL = b"dlweb metadata cluster"


@dataclass(frozen=True)
class MetadataUrl:
    """A parsed metadata URL: the SQLite file's `path`, or PostgreSQL's `url` to connect with."""

    engine: str
    path: Path | None = None
    url: str = ""
    shown: str = ""  # as messages name it: the path, or the URL without its password


def parse_metadata_url(text: str, where: str = "metadata URL") -> MetadataUrl:
    """A metadata URL as given in a configuration or on the command line; ConfigError naming
    `where` for anything else."""

    def bad(reason: str) -> ConfigError:
        return ConfigError(f"{where} {clipped(text)!r}: {reason} (give {_FORMS})")

    if not text.strip():
        raise bad("empty")
    if "://" not in text:
        return MetadataUrl("sqlite", path=Path(text), shown=text)
    scheme = text.split("://", 1)[0].lower()
    engine = _SCHEMES.get(scheme)
    if engine is None:
        raise bad(f"the engine {scheme!r} is not one of {', '.join(ENGINES)}")
    parts = urlsplit(text)
    if engine == "sqlite":
        if parts.netloc or not parts.path or parts.path == "/":
            raise bad("an SQLite URL is sqlite:/// followed by the file's path")
        path = unquote(parts.path)
        return MetadataUrl("sqlite", path=Path(path), shown=path)
    try:
        port = parts.port
    except ValueError:
        raise bad("the port must be a number from 1 to 65535") from None
    if not parts.hostname:
        raise bad("no host")
    if port == 0:
        raise bad("the port must be a number from 1 to 65535")
    database = unquote(parts.path[1:])
    if not database or "/" in database:
        raise bad("the path must be the name of one database")
    if parts.fragment:
        raise bad("a fragment (#) means nothing here")
    user = f"{unquote(parts.username)}@" if parts.username else ""
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    shown = f"postgresql://{user}{host}{f':{port}' if port else ''}/{database}"
    return MetadataUrl("postgresql", url=text, shown=shown)


def cluster_id(name: str, secret: bytes) -> str:
    """The id a cluster's databases are marked with: its name, and a digest of its secret that
    tells two clusters of the same name apart without revealing the secret."""
    digest = hmac.new(secret, _CLUSTER_LABEL, hashlib.sha256).hexdigest()[:16]
    return f"{name}/{digest}"


class Executor(Protocol):
    """What both engines' connections offer: sqlite3's, and archive.pg's PgDatabase."""

    def execute(self, sql: str, parameters: Any = ()) -> Any: ...


def check_cluster(found: str | None, cluster: str, where: str) -> None:
    """Refuses a database marked with another cluster's id (`found`, None for a database not
    marked yet), before anything is written to it."""
    if found is not None and found != cluster:
        theirs, ours = found.split("/")[0], cluster.split("/")[0]
        raise DlwebError(
            f"{where} belongs to another cluster ({theirs!r}, id {found}), not to this one"
            f" ({ours!r}, id {cluster}): check the database URL and the cluster's secret"
        )


def mark_cluster(db: Executor, cluster: str) -> None:
    """Writes the cluster's id into a new database's dlweb_meta table, in the caller's
    transaction."""
    db.execute("INSERT INTO dlweb_meta (key, value) VALUES ('cluster', ?)", (cluster,))
