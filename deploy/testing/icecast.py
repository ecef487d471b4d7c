"""Debian's icecast2 on loopback, with ffmpeg encoders feeding its mounts in real time (MP3, AAC
or Ogg Vorbis), titles set through its admin API, listeners listed and dropped server-side.

`Icecast` is a context manager that starts on entry and stops everything it started on exit;
its processes are started by `deploy.testing.spawn`, so a killed test run leaves none behind.
"""

import base64
import contextlib
import grp
import json
import os
import pwd
import secrets
import subprocess
import urllib.parse
import urllib.request
import xml.etree.ElementTree as ElementTree
from dataclasses import KW_ONLY, dataclass, field
from pathlib import Path
from typing import Literal

from deploy.testing.ports import free_port
from deploy.testing.spawn import Started, end, spawn, tail
from deploy.testing.waits import NotReady, wait_until

READY_TIMEOUT = 20.0
SAMPLE_RATE = 44100

Codec = Literal["mp3", "aac", "ogg"]

# codec: (ffmpeg muxer, ffmpeg encoder and its options, Content-Type sent to Icecast)
CODECS: dict[str, tuple[str, list[str], str]] = {
    "mp3": (
        "mp3",
        ["libmp3lame", "-compression_level", "9", "-id3v2_version", "0", "-write_xing", "0"],
        "audio/mpeg",
    ),
    "aac": ("adts", ["aac"], "audio/aac"),
    "ogg": ("ogg", ["libvorbis"], "audio/ogg"),
}


def signal_source(seed: int = 0) -> str:
    """An ffmpeg lavfi source of a 44.1 kHz stereo signal that never repeats: a tone whose pitch
    wanders with two slow modulations of incommensurate periods, plus a little noise seeded by
    `seed`, so that two sources of different seeds never carry the same bytes. It costs little:
    about 2% of a core in real time."""
    base = 220 + (seed * 37) % 300
    # The phase of a tone of frequency base + 150 sin(0.8168 t) + 40 sin(0.10744 t), integrated.
    tone = (
        f"sin(2*PI*({base}*t-{150 / 0.8168:.4f}*cos(0.8168*t)-{40 / 0.10744:.4f}*cos(0.10744*t)))"
    )
    noise = f"0.05*(2*random(0)-1)+0*if(eq(n,0),st(0,{seed + 1}),0)"
    return f"aevalsrc=exprs='0.3*{tone}+{noise}':s={SAMPLE_RATE},aformat=channel_layouts=stereo"


@dataclass
class Listener:
    """A listener of an Icecast mount, as its admin API lists it."""

    id: str
    ip: str
    user_agent: str
    connected_seconds: int


@dataclass
class Feed:
    """An ffmpeg encoder sending a generated signal to an Icecast mount in real time."""

    mount: str
    codec: str
    content_type: str
    bitrate_k: int
    readrate: float
    process: subprocess.Popen[bytes]
    log: Path

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def stop(self) -> None:
        """Stop the encoder: Icecast ends the mount and drops its listeners."""
        end(self.process)


@dataclass(eq=False, repr=False)
class Icecast(Started):
    """Debian's icecast2 on 127.0.0.1 and a free port, configured in `directory`.

    A new listener first gets a burst of up to `burst_size` bytes the source sent before it
    connected (about 4 s at 128 kbit/s by default), then the stream in real time. The burst
    starts at any byte, most often inside a frame (at the stream's first byte only while the
    stream is younger than the burst).

    MP3 and AAC listeners that send `Icy-MetaData: 1` get an ICY metadata block after every
    `metaint` bytes of audio: the first one carries the current title (`StreamTitle='';` if
    none), later ones are empty (a zero length byte) until the title changes. Titles are
    carried in Latin-1, a character outside it as an HTML numeric entity (`&#9835;`), and each
    block carries the title current when Icecast received the audio before it from the source,
    so the blocks in a new listener's burst may carry an older title. Ogg listeners get no ICY
    metadata: the title is in the stream's own comment header (see `set_title`).
    """

    directory: Path
    _: KW_ONLY
    burst_size: int = 65536
    metaint: int = 16000
    queue_size: int = 8 * 1024 * 1024
    max_sources: int = 300
    max_clients: int = 1000
    source_password: str = field(init=False, default_factory=lambda: secrets.token_hex(8))
    admin_user: str = field(init=False, default="admin")
    admin_password: str = field(init=False, default_factory=lambda: secrets.token_hex(8))
    port: int = field(init=False, default=0)
    config_path: Path = field(init=False)
    # Icecast opens its logs once it runs as `nobody` (below), perhaps in a directory whose
    # parents `nobody` cannot enter: it finds them relative to its working directory.
    log_dir: Path = field(init=False)
    _process: subprocess.Popen[bytes] | None = field(init=False, default=None)
    _feeds: list[Feed] = field(init=False, default_factory=list)

    def __post_init__(self) -> None:
        self.config_path = self.directory / "icecast.xml"
        self.log_dir = self.directory / "icecast-logs"

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def url(self, mount: str) -> str:
        return self.base + _mount(mount)

    # lifecycle

    def start(self) -> None:
        """Start Icecast and return once it answers; a port taken meanwhile is tried again."""
        self.directory.mkdir(parents=True, exist_ok=True)
        self.log_dir.mkdir(exist_ok=True)
        security = "<chroot>0</chroot>"
        if os.geteuid() == 0:
            # Icecast refuses to run as root unless told whom to become once its port is bound.
            user = pwd.getpwnam("nobody")
            try:
                group = grp.getgrnam("nogroup").gr_name
            except KeyError:
                group = grp.getgrgid(user.pw_gid).gr_name
            os.chown(self.log_dir, user.pw_uid, grp.getgrnam(group).gr_gid)
            security += f"<changeowner><user>nobody</user><group>{group}</group></changeowner>"
        for _ in range(3):
            self.port = free_port()
            self.config_path.write_text(self._config(security))
            self.config_path.chmod(0o600)
            log = self.directory / "icecast.out"
            self._process = spawn(["icecast2", "-c", str(self.config_path)], log, cwd=self.log_dir)
            with contextlib.suppress(NotReady):
                wait_until(
                    self._answers, "icecast2 to answer", READY_TIMEOUT, process=self._process
                )
                return
            end(self._process)
        raise RuntimeError(
            f"icecast2 did not start:\n{tail(log)}\n{tail(self.log_dir / 'error.log')}"
        )

    def close(self) -> None:
        """Stop every feed, then Icecast."""
        for feed in self._feeds:
            feed.stop()
        self._feeds.clear()
        if self._process is not None:
            end(self._process)
            self._process = None

    def _config(self, security: str) -> str:
        return f"""<icecast>
  <hostname>127.0.0.1</hostname>
  <limits>
    <clients>{self.max_clients}</clients>
    <sources>{self.max_sources}</sources>
    <queue-size>{self.queue_size}</queue-size>
    <client-timeout>30</client-timeout>
    <header-timeout>15</header-timeout>
    <source-timeout>10</source-timeout>
    <burst-on-connect>1</burst-on-connect>
    <burst-size>{self.burst_size}</burst-size>
  </limits>
  <authentication>
    <source-password>{self.source_password}</source-password>
    <relay-password>{self.source_password}</relay-password>
    <admin-user>{self.admin_user}</admin-user>
    <admin-password>{self.admin_password}</admin-password>
  </authentication>
  <listen-socket>
    <port>{self.port}</port>
    <bind-address>127.0.0.1</bind-address>
  </listen-socket>
  <mount type="default">
    <mp3-metadata-interval>{self.metaint}</mp3-metadata-interval>
  </mount>
  <fileserve>1</fileserve>
  <paths>
    <basedir>/usr/share/icecast2</basedir>
    <logdir>.</logdir>
    <webroot>/usr/share/icecast2/web</webroot>
    <adminroot>/usr/share/icecast2/admin</adminroot>
  </paths>
  <logging>
    <accesslog>access.log</accesslog>
    <errorlog>error.log</errorlog>
    <loglevel>3</loglevel>
  </logging>
  <security>{security}</security>
</icecast>
"""

    # sources

    def feed(
        self,
        mount: str,
        *,
        codec: Codec = "mp3",
        bitrate_k: int = 128,
        readrate: float = 1.0,
        title: str | None = None,
        seed: int | None = None,
        content_type: str | None = None,
    ) -> Feed:
        """Start an encoder sending a generated signal to `mount` at `readrate` times real time
        (1.01 for an encoder 1% fast), and return once the mount is live. `title` is set through
        the admin API for MP3 and AAC, and written into the stream's own comments for Ogg.
        `content_type` overrides the codec's (`application/ogg` instead of `audio/ogg`, say)."""
        mount = _mount(mount)
        muxer, encoder, default_type = CODECS[codec]
        content_type = content_type or default_type
        seed = len(self._feeds) if seed is None else seed
        command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "warning"]
        command += ["-readrate", str(readrate), "-f", "lavfi", "-i", signal_source(seed)]
        command += ["-c:a", *encoder, "-b:a", f"{bitrate_k}k", "-map_metadata", "-1"]
        if codec == "ogg" and title is not None:
            command += ["-metadata", f"title={title}"]
        command += ["-content_type", content_type, "-ice_name", f"test stream {mount}"]
        command += ["-f", muxer, self._source_url(mount)]
        feed = self._start_feed(command, mount, codec, content_type, bitrate_k, readrate)
        if title is not None and codec != "ogg":
            self.set_title(mount, title)
        return feed

    def relay(self, mount: str, path: Path, bitrate_k: int = 128) -> Feed:
        """Start sending an MP3 file, looped, to `mount` as it is (`-c copy`, a packet at a
        time, in real time), as a live encoder sends, and return once the mount is live."""
        mount = _mount(mount)
        command = ["ffmpeg", "-nostdin", "-hide_banner", "-loglevel", "error", "-re"]
        command += ["-stream_loop", "-1", "-i", str(path), "-c", "copy", "-flush_packets", "1"]
        command += ["-content_type", "audio/mpeg", "-f", "mp3", self._source_url(mount)]
        return self._start_feed(command, mount, "mp3", "audio/mpeg", bitrate_k, 1.0)

    def _source_url(self, mount: str) -> str:
        return f"icecast://source:{self.source_password}@127.0.0.1:{self.port}{mount}"

    def _start_feed(
        self,
        command: list[str],
        mount: str,
        codec: Codec,
        content_type: str,
        bitrate_k: int,
        readrate: float,
    ) -> Feed:
        """Start the encoder `command` for `mount`; return once the mount is live."""
        log = self.directory / f"feed{mount.replace('/', '-')}.log"
        process = spawn(command, log)
        feed = Feed(mount, codec, content_type, bitrate_k, readrate, process, log)
        self._feeds.append(feed)
        try:
            wait_until(
                lambda: self.is_live(mount),
                f"the feed of {mount} to go live",
                READY_TIMEOUT,
                process=process,
                details=lambda: tail(log),
            )
        except NotReady:
            feed.stop()
            raise
        return feed

    def _answers(self) -> bool:
        """Whether its status page answers (right after its start it is not yet valid JSON)."""
        try:
            self.status()
        except (OSError, ValueError):
            return False
        return True

    def status(self) -> list[dict[str, object]]:
        """The live sources as /status-json.xsl lists them (one source is not a list there)."""
        with urllib.request.urlopen(self.base + "/status-json.xsl", timeout=5) as answer:
            stats = json.loads(answer.read())["icestats"]
        sources = stats.get("source", [])
        return [sources] if isinstance(sources, dict) else list(sources)

    def is_live(self, mount: str) -> bool:
        url = self.url(mount)
        return any(source.get("listenurl") == url for source in self.status())

    def title(self, mount: str) -> str | None:
        """The mount's current title as Icecast reports it. Icecast reads an Ogg stream's own
        title only once the mount has had a listener: None until then."""
        for source in self.status():
            if source.get("listenurl") == self.url(mount):
                title = source.get("title")
                return None if title is None else str(title)
        return None

    def set_title(self, mount: str, title: str) -> None:
        """Set the title through the admin API (`updinfo`). MP3 and AAC listeners get it in
        their next ICY metadata block; on an Ogg Vorbis mount Icecast ends the logical stream
        and starts a new one whose comment header carries `title=` (a chained Ogg stream).
        Either way it takes effect with the next audio the source sends, not at once."""
        answer = self._admin(
            "metadata", mount=_mount(mount), mode="updinfo", song=title, charset="UTF-8"
        )
        if b"<return>1</return>" not in answer:
            raise RuntimeError(f"Icecast refused the title of {mount}: {answer!r}")

    def listeners(self, mount: str) -> list[Listener]:
        """The mount's listeners, from the admin API (`listclients`)."""
        tree = ElementTree.fromstring(self._admin("listclients", mount=_mount(mount)))
        return [
            Listener(
                id=node.findtext("ID", ""),
                ip=node.findtext("IP", ""),
                user_agent=node.findtext("UserAgent", ""),
                connected_seconds=int(node.findtext("Connected", "0")),
            )
            for node in tree.iter("listener")
        ]

    def kill_listener(self, mount: str, listener_id: str) -> None:
        self._admin("killclient", mount=_mount(mount), id=listener_id)

    def kill_listeners(self, mount: str) -> int:
        """Drop every listener of the mount server-side (`killclient`); how many there were."""
        listeners = self.listeners(mount)
        for listener in listeners:
            self.kill_listener(mount, listener.id)
        return len(listeners)

    def _admin(self, command: str, **params: str) -> bytes:
        url = f"{self.base}/admin/{command}?{urllib.parse.urlencode(params)}"
        credentials = f"{self.admin_user}:{self.admin_password}".encode()
        authorization = "Basic " + base64.b64encode(credentials).decode()
        request = urllib.request.Request(url, headers={"Authorization": authorization})
        with urllib.request.urlopen(request, timeout=5) as answer:
            body: bytes = answer.read()
            return body


def _mount(mount: str) -> str:
    return mount if mount.startswith("/") else "/" + mount
