"""The storage node's HTTP interface: contents, structure files, status, metrics, inventory."""

import asyncio
import logging
import time
from collections import Counter
from collections.abc import Awaitable, Callable

from aiohttp import web

from archive import jsonwire, pack
from archive.answers import Answer
from archive.errors import BadName, ClientFault, DlwebError, HashMismatch, NotFound
from archive.hashing import check_name
from archive.insert_calls import FORWARD_HEADER, UploadReceipt, forward_chain
from archive.node_answers import (
    Closest,
    ContentChecked,
    ContentsStored,
    ContentStored,
    DayCounts,
    Deleted,
    Inventory,
    NamesFilter,
    RecordRange,
    Scrubbed,
    StorageStatus,
    StructureAppended,
    StructurePut,
    StructuresAppended,
)
from archive.serving import json_error, status_of, token_guard
from archive.structure import INT64_MAX, INT64_MIN, BadRecord, Capture, Mode
from archive.timestamps import MAX_TIME, MIN_TIME, BadTime, parse_time
from archive.urlkey import BadUrl, structure_name

from .forwarding import Forwarder
from .node import CONTENT, STRUCTURE, Copy, StorageNode, UrlMismatch
from .scrub import ScrubRunning, content_fault, scrub
from .sendfile import send_file
from .stores import SMALL_CONTENT, VolumeStore

log = logging.getLogger(__name__)

MAX_JSON_BODY = 16 * 1024 * 1024
MAX_RANGE_LIMIT = 100_000
MAX_BATCH_FILES = 5_000
READ_CHUNK = 256 * 1024
_CLIENT_ERRORS = (BadName, HashMismatch, BadRecord, BadTime, BadUrl, UrlMismatch, pack.BadPack)
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

NODE = web.AppKey("node", StorageNode)
TOKEN = web.AppKey("token", str)
FORWARDER = web.AppKey("forwarder", Forwarder)
METRICS = web.AppKey("metrics", Counter[str])
REQUESTS = web.AppKey("requests", Counter[tuple[str, str, int]])
STARTED = web.AppKey("started", float)
StatusSource = Callable[[], dict[str, object]]
EXTRA_STATUS: web.AppKey[StatusSource] = web.AppKey("extra_status")
routes = web.RouteTableDef()


class Late(ClientFault):
    """An append that arrived after the deadline its sender gave: the sender has given up."""

    status = 409


def _json(answer: Answer, status: int = 200) -> web.Response:
    return web.json_response(answer.to_json(), status=status, dumps=jsonwire.dumps)


def _check_deadline(body: object) -> None:
    """Refuse an append its sender no longer waits for: a request a cut link delivered late
    would add records its sender reported as failed, to a copy that may no longer be active."""
    deadline = body.get("deadline") if isinstance(body, dict) else None
    if deadline is None:
        return
    if not isinstance(deadline, int | float) or isinstance(deadline, bool):
        raise BadRecord('"deadline" must be a time in seconds since 1970')
    late = time.time() - deadline
    if late > 0:
        raise Late(f"append arrived {late:.1f} s after its deadline; its sender gave up on it")


_guard = token_guard(lambda request: request.app[TOKEN], "storage node")


@web.middleware
async def _count(request: web.Request, handler: Handler) -> web.StreamResponse:
    """Count each request by method, route and the status it was answered with."""
    try:
        response = await handler(request)
    except web.HTTPException as exc:
        _counted(request, exc.status)
        raise
    _counted(request, response.status)
    return response


def _counted(request: web.Request, status: int) -> None:
    route = request.match_info.route.resource
    label = route.canonical if route is not None else "unmatched"
    request.app[REQUESTS][(request.method, label, status)] += 1


def _name(request: web.Request) -> str:
    return check_name(request.match_info["name"])


@routes.get("/content/{name}")
async def get_content(request: web.Request) -> web.StreamResponse:
    name = _name(request)
    node = request.app[NODE]
    if not node.filter.might_hold(name):
        raise NotFound(f"content {name} is not on this node")
    request.app[METRICS]["dlweb_node_content_reads_total"] += 1
    headers = {"Content-Type": "application/octet-stream", "ETag": f'"{name}"'}
    return await _send_stored(request, node.contents, name, headers)


async def _send_stored(
    request: web.Request, store: VolumeStore, name: str, headers: dict[str, str]
) -> web.StreamResponse:
    """A stored file as the body: read in one call when a volume could hold it, else handed to
    the kernel with sendfile."""
    try:
        span, data = store.read_small(name)
    except FileNotFoundError:
        kind = CONTENT if store is request.app[NODE].contents else STRUCTURE
        raise NotFound(f"{kind} {name} is not on this node") from None
    if data is not None:
        return web.Response(body=data, headers=headers)
    return await send_file(request, span.path, headers, request.app[NODE].executor)


@routes.post("/content/{name}/check")
async def check_content(request: web.Request) -> web.Response:
    """Re-hash one content now, as a scrub would: a reader that got bytes of another hash from
    this node asks; a bad copy is quarantined (the master then repairs it from another)."""
    name = _name(request)
    try:
        problem = await request.app[NODE].check_file(CONTENT, name, content_fault)
    except FileNotFoundError:
        raise NotFound(f"content {name} is not on this node") from None
    return _json(ContentChecked(name, problem is not None, problem))


@routes.post("/contents/pack")
async def post_pack(request: web.Request) -> web.StreamResponse:
    """Many contents in one stream (storage_node/pack.py), for copies between nodes."""
    body = await _json_body(request)
    names = body.get("names") if isinstance(body, dict) else None
    if not isinstance(names, list) or not 0 < len(names) <= pack.MAX_NAMES:
        raise ClientFault(f'body must be {{"names": [...]}} with 1 to {pack.MAX_NAMES} names')
    checked = [check_name(name) if isinstance(name, str) else check_name("") for name in names]
    node = request.app[NODE]
    response = web.StreamResponse(headers={"Content-Type": "application/x-dlweb-pack"})
    await response.prepare(request)
    for chunk in pack.writes(_frame(node, name) for name in checked):
        await response.write(chunk)
    await response.write_eof()
    request.app[METRICS]["dlweb_node_content_reads_total"] += len(checked)
    return response


def _frame(node: StorageNode, name: str) -> bytes:
    try:
        _, data = node.contents.read_small(name)
        if data is None or len(data) > pack.MAX_PACKED:
            return pack.unsent_frame(name, pack.TOO_LARGE)
        return pack.encode_frame(name, data)
    except FileNotFoundError:
        return pack.unsent_frame(name, pack.MISSING)


def _chain(request: web.Request) -> list[str]:
    """The nodes an upload is to be passed on to (archive/insert_calls.py)."""
    return forward_chain(request.headers.get(FORWARD_HEADER))


@routes.post("/contents")
async def post_contents(request: web.Request) -> web.Response:
    """Many small contents in one request: a pack (archive/pack.py) of up to MAX_NAMES frames,
    passed on down its chain of nodes as it arrived (no framing again) while it is stored here.
    Its names are the hex of the frames' digests, so they need no check."""
    chain = _chain(request)
    pieces: list[bytes] | None = [] if chain else None
    items = [item async for item in pack.read_upload(request.content, pieces=pieces)]
    node = request.app[NODE]
    relay = pack.Relay(pieces or [])
    created, (forwarded, failed) = await request.app[FORWARDER].along(
        chain, "/contents", "POST", lambda: node.put_contents(items), relay
    )
    request.app[METRICS]["dlweb_node_content_writes_total"] += len(items)
    return _json(ContentsStored(len(items), UploadReceipt(created, forwarded, failed)))


@routes.put("/content/{name}")
async def put_content(request: web.Request) -> web.Response:
    """One content, passed on down its chain of nodes as it is stored here."""
    name = _name(request)
    chain = _chain(request)
    node = request.app[NODE]
    forwarder = request.app[FORWARDER]
    path = f"/content/{name}"
    length = request.content_length
    # A content the space left cannot take is refused before a byte of it is read.
    node.space.check(length or 0, node.holds(CONTENT, name))
    if length is not None and length <= SMALL_CONTENT:
        data = await request.read()

        async def store() -> int:
            return await node.put_contents([(name, data)])

        count, (forwarded, failed) = await forwarder.along(chain, path, "PUT", store, data)
        created = count > 0
    else:
        chunks = request.content.iter_chunked(READ_CHUNK)
        if chain:
            created, (forwarded, failed) = await forwarder.tee(
                chain, path, chunks, lambda body: node.put_content(name, body)
            )
        else:
            created, forwarded, failed = await node.put_content(name, chunks), (), {}
    request.app[METRICS]["dlweb_node_content_writes_total"] += 1
    receipt = UploadReceipt(int(created), forwarded, failed)
    return _json(ContentStored(name, receipt), status=201 if created else 200)


@routes.delete("/content/{name}")
@routes.delete("/structure/{name}")
async def delete_file(request: web.Request) -> web.Response:
    name = _name(request)
    kind = CONTENT if request.path.startswith("/content/") else STRUCTURE
    if not await request.app[NODE].delete(kind, name):
        raise NotFound(f"{kind} {name} is not on this node")
    return _json(Deleted(name, True))


async def _json_body(request: web.Request) -> object:
    try:
        return jsonwire.loads(await request.read())
    except (ValueError, UnicodeDecodeError):
        raise ClientFault("request body is not valid JSON") from None


def _captures_of(body: object, name: str) -> tuple[str, list[Capture]]:
    """The URL and capture records of an append to structure file `name`, naming the first bad
    field, or a URL that does not belong to the file."""
    if not isinstance(body, dict) or not isinstance(body.get("url"), str):
        raise BadRecord('body must be {"url": "...", "records": [...]}')
    if name != structure_name(body["url"]):
        raise UrlMismatch(f"URL {body['url'][:200]!r} does not belong to structure file {name}")
    records = body.get("records")
    if not isinstance(records, list) or not records:
        raise BadRecord('"records" must be a non-empty list of capture records')
    captures = []
    for index, raw in enumerate(records):
        try:
            captures.append(Capture.from_json(raw))
        except DlwebError as exc:
            raise BadRecord(f"records[{index}]: {exc}") from None
    return body["url"], captures


@routes.post("/structure/{name}")
async def append_structure(request: web.Request) -> web.Response:
    name = _name(request)
    body = await _json_body(request)
    _check_deadline(body)
    url, captures = _captures_of(body, name)
    added, created = await request.app[NODE].append_captures(name, url, captures)
    return _json(StructureAppended(name, added, created))


_Entry = tuple[int, str, str, list[Capture]]  # index in the batch, file name, URL, captures


@routes.post("/structures")
async def append_structures(request: web.Request) -> web.Response:
    """Appends to many structure files in one request (an index node's batch); each file gets
    its own result, so one bad file does not cost the others."""
    body = await _json_body(request)
    _check_deadline(body)
    files = body.get("files") if isinstance(body, dict) else None
    if not isinstance(files, list) or not 0 < len(files) <= MAX_BATCH_FILES:
        raise BadRecord(f'body must be {{"files": [...]}} with 1 to {MAX_BATCH_FILES} files')
    node = request.app[NODE]
    results: list[dict[str, object] | None] = [None] * len(files)
    parsed: list[_Entry] = []
    for index, item in enumerate(files):
        name = item.get("name") if isinstance(item, dict) else None
        try:
            checked = check_name(name if isinstance(name, str) else "")
            url, captures = _captures_of(item, checked)
        except _CLIENT_ERRORS as exc:
            results[index] = {"name": name, "error": f"files[{index}]: {exc}", "status": 400}
            continue
        parsed.append((index, checked, url, captures))
    replicating = isinstance(body, dict) and body.get("replica") is True
    replica = _Replica(node, files, parsed) if replicating else None
    if replica is not None:
        parsed = replica.takes(parsed, results)
    copy_of = replica.copy_of if replica is not None else _active
    # New files are created together (with the records of every entry naming them), then files
    # in volumes are appended to together; what neither step took goes one by one.
    created: dict[str, int] = {}
    for copy in Copy:
        group = [(n, u, c) for _, n, u, c in parsed if copy_of(n) is copy]
        if group:
            created |= await _batch_step("creating", node.create_structures(group, copy))
    rest = _settle(results, parsed, created, True)
    copy = Copy.ACTIVE if replica is None else Copy.OTHER
    appended = await _batch_step(
        "appending to", node.append_in_volumes([(n, c) for _, n, _, c in rest], copy)
    )
    single = _settle(results, rest, appended, False)

    async def one(index: int, name: str, url: str, captures: list[Capture]) -> None:
        try:
            added, made = await node.append_captures(name, url, captures, copy_of(name))
        except _CLIENT_ERRORS as exc:
            results[index] = {"name": name, "error": f"files[{index}]: {exc}", "status": 400}
        except DlwebError as exc:
            error = f"files[{index}]: {exc}"
            results[index] = {"name": name, "error": error, "status": status_of(exc)}
        else:
            results[index] = {"name": name, "added": added, "created": made}

    await asyncio.gather(*(one(*item) for item in single))
    return _json(StructuresAppended(results))


def _active(_name: str) -> Copy:
    return Copy.ACTIVE


class _Replica:
    """An append to copies other than the active one, made before an insert is acknowledged
    so its records are on two disks: it creates only the files it is told to, partial ones
    (whose older records it lacks) stale."""

    def __init__(self, node: StorageNode, files: list[object], parsed: list[_Entry]) -> None:
        self.node = node
        self.creatable: set[str] = set()
        self.partial: set[str] = set()
        for index, name, _, _ in parsed:
            item = files[index]
            if isinstance(item, dict) and item.get("create") is True:
                self.creatable.add(name)
                if item.get("partial") is True:
                    self.partial.add(name)

    def takes(self, parsed: list[_Entry], results: list[dict[str, object] | None]) -> list[_Entry]:
        """The entries to append: those of files held here or that may be created."""
        taken = []
        for entry in parsed:
            index, name = entry[0], entry[1]
            if name in self.creatable or self.node.holds(STRUCTURE, name):
                taken.append(entry)
            else:
                error = f"files[{index}]: structure {name} is not on this node"
                results[index] = {"name": name, "error": error, "status": 404}
        return taken

    def copy_of(self, name: str) -> Copy:
        return Copy.PARTIAL if name in self.partial else Copy.OTHER


async def _batch_step(what: str, step: Awaitable[dict[str, int]]) -> dict[str, int]:
    """What a batch step of `append_structures` took, or nothing if it failed as a whole (its
    files are then tried one by one)."""
    try:
        return await step
    except DlwebError as exc:
        log.warning("%s a batch of structure files failed: %s", what, exc)
        return {}


def _settle(
    results: list[dict[str, object] | None],
    entries: list[_Entry],
    taken: dict[str, int],
    created: bool,
) -> list[_Entry]:
    """Give the first entry of each file a batch step took its result; the entries left."""
    left = []
    for entry in entries:
        index, name = entry[0], entry[1]
        if name in taken:
            results[index] = {"name": name, "added": taken.pop(name), "created": created}
        else:
            left.append(entry)
    return left


@routes.put("/structure/{name}")
async def put_structure(request: web.Request) -> web.Response:
    name = _name(request)
    created = await request.app[NODE].put_structure(name, request.content.iter_chunked(READ_CHUNK))
    return _json(StructurePut(name, created), status=201 if created else 200)


def _int_param(request: web.Request, key: str, default: int, low: int, high: int) -> int:
    raw = request.query.get(key)
    if raw is None:
        return default
    if not raw.isdigit() or not low <= int(raw) <= high:
        raise ClientFault(f"query parameter {key}={raw[:20]!r} must be an integer {low}..{high}")
    return int(raw)


def _time_param(request: web.Request, key: str, default: int | None = None) -> int:
    raw = request.query.get(key)
    if raw is None:
        if default is not None:
            return default
        raise ClientFault(f"query parameter {key!r} is required")
    try:
        return parse_time(raw)
    except BadTime as exc:
        raise BadTime(f"query parameter {key}: {exc}") from None


def _record_json(capture: Capture, index: int) -> dict[str, object]:
    return {**capture.to_json(), "index": index}


@routes.get("/structure/{name}")
async def get_structure(request: web.Request) -> web.StreamResponse:
    """The raw file without `mode`; otherwise a binary-search query answered in JSON, or with
    `mode=days` the captures from `from` to `to` counted per day (StructureReader.count_days).
    A range or count without `from` or `to` starts at the first record or ends at the last, so
    that listing every capture depends on no date (a record of year 1 is listed too)."""
    name = _name(request)
    node = request.app[NODE]
    mode_text = request.query.get("mode")
    if mode_text is None:
        headers = {"Content-Type": "application/octet-stream"}
        return await _send_stored(request, node.structures, name, headers)
    if mode_text == "days":
        # Days exist from year 1 to 9999: a record outside, which only an append naming its
        # time can make, has no day to be counted under.
        start = _time_param(request, "from", MIN_TIME)
        stop = _time_param(request, "to", MAX_TIME)
        request.app[METRICS]["dlweb_node_structure_queries_total"] += 1
        with node.open_structure(name) as sfile:
            days = await node.run_io(sfile.reader.count_days, start, stop)
            counted = tuple(day.to_json() for day in days)
            return _json(DayCounts(name, sfile.reader.url, counted))
    try:
        mode = Mode(mode_text)
    except ValueError:
        modes = ", ".join([*(m.value for m in Mode), "days"])
        raise ClientFault(f"mode {mode_text[:20]!r} is not one of {modes}") from None
    request.app[METRICS]["dlweb_node_structure_queries_total"] += 1
    with node.open_structure(name) as sfile:
        reader = sfile.reader
        if mode is Mode.RANGE:
            start = reader.bisect_left(_time_param(request, "from", INT64_MIN))
            stop = reader.bisect_right(_time_param(request, "to", INT64_MAX))
            limit = _int_param(request, "limit", 1000, 1, MAX_RANGE_LIMIT)
            found = reader.records(start, min(stop, start + limit))
            records = [_record_json(c, start + i) for i, c in enumerate(found)]
            return _json(RecordRange(name, reader.url, reader.count, records=records))
        index = reader.find(mode, _time_param(request, "at"))
        if index is None:
            return _json(RecordRange(name, reader.url, reader.count, records=[]), status=404)

        def record_at(at: int | None) -> dict[str, object] | None:
            return None if at is None else _record_json(reader.record(at), at)

        return _json(
            Closest(
                name,
                reader.url,
                reader.count,
                records=[record_at(index)],
                first=record_at(reader.replayed_from(0, 1)),
                last=record_at(reader.replayed_from(reader.count - 1, -1)),
                prev=record_at(reader.replayed_from(index - 1, -1)),
                next=record_at(reader.replayed_from(index + 1, 1)),
            )
        )


@routes.get("/status")
async def get_status(request: web.Request) -> web.Response:
    node = request.app[NODE]
    names = node.filter
    status = StorageStatus(
        node.id,
        round(time.monotonic() - request.app[STARTED], 3),
        node.space.to_json(),
        node.counts.files,
        node.counts.bytes,
        tuple(sorted(node.groups)),
        node.inventory.seq,
        NamesFilter(names.count, names.capacity, names.deletion_count),
        request.app[EXTRA_STATUS](),
    )
    return _json(status)


@routes.get("/metrics")
async def get_metrics(request: web.Request) -> web.Response:
    node = request.app[NODE]
    lines = [f"{key} {value}" for key, value in sorted(request.app[METRICS].items())]
    for (method, route, code), count in sorted(request.app[REQUESTS].items()):
        labels = f'method="{method}",route="{route}",status="{code}"'
        lines.append(f"dlweb_node_requests_total{{{labels}}} {count}")
    for kind in (CONTENT, STRUCTURE):
        lines.append(f'dlweb_node_files{{kind="{kind}"}} {node.counts.files[kind]}')
        lines.append(f'dlweb_node_bytes{{kind="{kind}"}} {node.counts.bytes[kind]}')
    disk = node.space.to_json()
    lines += [
        f"dlweb_node_disk_free_bytes {disk['free']}",
        f"dlweb_node_disk_total_bytes {disk['total']}",
        f"dlweb_node_disk_reserve_bytes {disk['reserve']}",
        f"dlweb_node_disk_full {int(bool(disk['full']))}",
        f"dlweb_node_writes_refused_full_total {disk['refused']}",
    ]
    for key, value in request.app[EXTRA_STATUS]().items():
        if isinstance(value, dict):
            # A flag (a bool is an int) is written as 0 or 1, as Prometheus reads it.
            lines += [
                f"dlweb_node_{key}_{k} {int(v)}" for k, v in value.items() if isinstance(v, int)
            ]
    return web.Response(text="\n".join(lines) + "\n", content_type="text/plain")


@routes.get("/inventory")
async def get_inventory(request: web.Request) -> web.Response:
    """Inventory entries after `since`, for a master catching up with this node."""
    since = _int_param(request, "since", 0, 0, 1 << 62)
    limit = _int_param(request, "limit", 10_000, 1, 100_000)
    node = request.app[NODE]
    entries = [e.to_json() for e in node.inventory.read_since(since, limit)]
    return _json(Inventory(node.id, node.inventory.seq, entries))


@routes.post("/scrub")
async def post_scrub(request: web.Request) -> web.Response:
    """Scrub the node now and answer with the report (the master's order works without HTTP)."""
    try:
        report = await scrub(request.app[NODE])
    except ScrubRunning as exc:
        return json_error(409, str(exc))
    return _json(Scrubbed(report.checked, tuple(report.bad)))


def build_app(
    node: StorageNode,
    token: str,
    extra_status: Callable[[], dict[str, object]] = dict,
) -> web.Application:
    app = web.Application(middlewares=[_count, _guard], client_max_size=MAX_JSON_BODY)
    app[NODE] = node
    app[TOKEN] = token
    app[FORWARDER] = Forwarder(token)
    app.cleanup_ctx.append(app[FORWARDER].cleanup)
    app[METRICS] = Counter()
    app[REQUESTS] = Counter()
    app[STARTED] = time.monotonic()
    app[EXTRA_STATUS] = extra_status
    app.add_routes(routes)
    return app
