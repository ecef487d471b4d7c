"""A real PostgreSQL server for the tests and benchmarks of the metadata stores: Debian's binaries,
a cluster made by initdb in a temporary folder, served on a free loopback port and on a unix
socket in that folder, and removed when stopped.

initdb and postgres refuse to run as root, as CI runs: there the server runs as the `postgres`
system user (Debian's package makes it), which owns the folder. Clients connect over TCP with a
password, so that a wrong password is refused as on a real installation; the fixture's own
commands (psql) use the socket.
"""

from __future__ import annotations

import glob
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Sequence
from pathlib import Path

from deploy.testing.ports import free_port
from deploy.testing.waits import NotReady, wait_until

READY_TIMEOUT = 30.0
USER = "dlweb"
SETTINGS = (
    # A commit is written to the kernel before it is acknowledged (synchronous_commit stays on),
    # but not synced: a killed server (SIGQUIT) loses nothing the kernel has, and no test pulls
    # the power.
    "fsync=off",
    "full_page_writes=off",
    "shared_buffers=32MB",
    "max_connections=60",
    "listen_addresses=127.0.0.1",
    "log_min_messages=warning",
)


class PostgresMissing(RuntimeError):
    """No PostgreSQL server binaries, or no user to run them as."""


def server_binaries() -> Path:
    """Debian's directory of the newest PostgreSQL server installed (/usr/lib/postgresql/N/bin)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/postgres"),
        key=lambda path: int(Path(path).parent.parent.name),
    )
    if not found:
        raise PostgresMissing(
            "no PostgreSQL server in /usr/lib/postgresql/*/bin: apt-get install postgresql"
        )
    return Path(found[-1]).parent


class PostgresServer:
    """One cluster in its own temporary folder; `start` (again after `kill` or `stop`) serves it,
    with SETTINGS and then `settings` (name=value, the later winning)."""

    def __init__(self, settings: Sequence[str] = ()) -> None:
        self.settings = (*SETTINGS, *settings)
        self.bin = server_binaries()
        self._as: list[str] = []
        owner = None
        if os.geteuid() == 0:
            try:
                owner = pwd.getpwnam("postgres")
            except KeyError:
                raise PostgresMissing(
                    "running as root, and no `postgres` user to run the server as"
                ) from None
            self._as = [
                "setpriv",
                f"--reuid={owner.pw_uid}",
                f"--regid={owner.pw_gid}",
                "--init-groups",
                "--",
            ]
        self.root = Path(tempfile.mkdtemp(prefix="dlweb-postgres-"))
        self.data = self.root / "data"
        self.socket_dir = self.root / "run"
        self.socket_dir.mkdir()
        if owner is not None:
            for path in (self.root, self.socket_dir):
                os.chown(path, owner.pw_uid, owner.pw_gid)
        self.password = secrets.token_hex(12)
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None
        self._databases = 0
        self._initdb()

    def _initdb(self) -> None:
        password_file = self.root / "password"
        password_file.write_text(self.password + "\n")
        if self._as:
            owner = pwd.getpwnam("postgres")
            os.chown(password_file, owner.pw_uid, owner.pw_gid)
        self._run(
            str(self.bin / "initdb"),
            "--pgdata",
            str(self.data),
            "--username",
            USER,
            "--pwfile",
            str(password_file),
            "--auth-local=trust",
            "--auth-host=scram-sha-256",
            "--encoding=UTF8",
            "--locale=C",
            "--no-sync",
        )
        password_file.unlink()

    def _run(self, *command: str) -> str:
        done = subprocess.run(
            [*self._as, *command], capture_output=True, text=True, cwd=self.root, check=False
        )
        if done.returncode != 0:
            raise RuntimeError(f"{Path(command[0]).name} failed:\n{done.stdout}{done.stderr}")
        return done.stdout

    @property
    def log_path(self) -> Path:
        return self.root / "postgres.log"

    def url(self, database: str = "postgres", user: str = USER, password: str | None = None) -> str:
        """The URL a client connects with, over TCP with the password unless another is given."""
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{database}"

    def start(self) -> PostgresServer:
        if self.process is not None:
            return self
        command = [str(self.bin / "postgres"), "-D", str(self.data), "-p", str(self.port)]
        command += ["-k", str(self.socket_dir)]
        for setting in self.settings:
            command += ["-c", setting]
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*self._as, *command], stdout=log, stderr=subprocess.STDOUT, cwd=self.root
            )
        self._wait_ready()
        return self

    def _wait_ready(self) -> None:
        """Asks pg_isready until the server accepts connections, or fails with its log."""
        process = self.process
        assert process is not None
        check = [str(self.bin / "pg_isready"), "-q", "-h", str(self.socket_dir)]
        check += ["-p", str(self.port), "-U", USER, "-d", "postgres", "-t", "1"]
        try:
            wait_until(
                lambda: subprocess.run(check, check=False).returncode == 0,
                "postgres to accept connections",
                READY_TIMEOUT,
                interval=0.02,
                process=process,
                details=self.log,
            )
        except NotReady:
            if process.poll() is not None:
                self.process = None  # exited at start: `start` starts it again
            raise

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def sql(self, statement: str, database: str = "postgres") -> str:
        """One statement run by psql over the socket, as the cluster's superuser; its rows."""
        return self._run(
            str(self.bin / "psql"),
            "-X",
            "-q",
            "-A",
            "-t",
            "-v",
            "ON_ERROR_STOP=1",
            "-h",
            str(self.socket_dir),
            "-p",
            str(self.port),
            "-U",
            USER,
            "-d",
            database,
            "-c",
            statement,
        )

    def create_database(self) -> str:
        """A new empty database; its URL."""
        self._databases += 1
        name = f"test_{self._databases}"
        self.sql(f"CREATE DATABASE {name} TEMPLATE template0 STRATEGY FILE_COPY")
        return self.url(name)

    def kill(self) -> None:
        """Stops the server as a crash would (immediate shutdown: no checkpoint, every backend
        ended at once, recovery at the next start)."""
        self._stop(signal.SIGQUIT)

    def stop(self) -> None:
        """A fast shutdown: sessions ended, a checkpoint written."""
        self._stop(signal.SIGINT)

    def _stop(self, sig: int) -> None:
        if self.process is None:
            return
        self.process.send_signal(sig)
        self.process.wait(timeout=60)
        self.process = None

    def remove(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)
