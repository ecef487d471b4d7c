"""A cluster client run as a process on a host of the test bed; it prints JSON on stdout.

    python -m tests.deploy.testbed_client get URL [--proxy URL]
    python -m tests.deploy.testbed_client insert -c FILE --seed S --count N ...
    python -m tests.deploy.testbed_client read -c FILE --seed S --urls U INDEX...
    python -m tests.deploy.testbed_client locate -c FILE --kind content NAME...
    python -m tests.deploy.testbed_client copies --kind content --node URL... NAME...

Captures are made from a seed (`capture`), so the test that reads this output can name every
content and URL itself.
"""

import argparse
import asyncio
import hashlib
import json
import sys
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

HEADER = b"HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\n"
BASE_TIME = 1_600_000_000_000_000
CONTENT_SIZE = 2048


def body(seed: int, index: int) -> bytes:
    """The content of capture `index` of corpus `seed`."""
    return hashlib.shake_256(f"testbed {seed} {index}".encode()).digest(CONTENT_SIZE)


def url(seed: int, index: int, urls: int) -> str:
    return f"http://site{seed}.example/page/{index % urls}"


def time_of(index: int) -> int:
    return BASE_TIME + index * 1_000_000


def content_name(seed: int, index: int) -> str:
    return hashlib.sha256(body(seed, index)).hexdigest()


def _print(value: Any) -> None:
    print(json.dumps(value), flush=True)


def _fetch(opener: urllib.request.OpenerDirector, address: str, timeout: float) -> dict[str, Any]:
    try:
        with opener.open(address, timeout=timeout) as answer:
            status, headers, data = answer.status, dict(answer.headers), answer.read()
    except urllib.error.HTTPError as exc:
        status, headers, data = exc.code, dict(exc.headers), exc.read()
    except OSError as exc:
        return {"error": str(exc)}  # no answer is an answer too: the caller decides
    text = data.decode("utf-8", "replace")
    return {
        "status": status,
        "headers": headers,
        "sha256": hashlib.sha256(data).hexdigest(),
        "text": text,
    }


def _get(args: argparse.Namespace) -> int:
    """Each URL's answer: status, headers, the SHA-256 and text of the body."""
    handlers = [urllib.request.ProxyHandler({"http": args.proxy} if args.proxy else {})]
    opener = urllib.request.build_opener(*handlers)
    answers = [_fetch(opener, address, args.timeout) for address in args.urls]
    _print(answers if len(answers) > 1 else answers[0])
    return 0


async def _insert(args: argparse.Namespace) -> int:
    from archive.cluster import ClusterClient, NewCapture
    from archive.config import load_config
    from archive.errors import DlwebError

    header = hashlib.sha256(HEADER).hexdigest()
    async with ClusterClient(load_config(args.config)) as client:
        for start in range(args.start, args.start + args.count, args.batch):
            end = min(start + args.batch, args.start + args.count)
            bodies = {header: HEADER}
            captures = []
            for index in range(start, end):
                data = body(args.seed, index)
                name = hashlib.sha256(data).hexdigest()
                bodies[name] = data
                captures.append(
                    NewCapture(
                        url(args.seed, index, args.urls),
                        time_of(index),
                        name,
                        header,
                        200,
                        len(data),
                        len(HEADER),
                    )
                )
            if start == args.start + args.pause_after * args.batch > args.start:
                _print({"paused": start})  # and wait for a line on stdin
                await asyncio.to_thread(sys.stdin.readline)
            try:
                async with asyncio.timeout(args.deadline):
                    await client.insert(captures, bodies.__getitem__)
            except (DlwebError, TimeoutError) as exc:
                _print({"failed": [start, end], "error": str(exc) or type(exc).__name__})
                continue
            _print({"acked": [start, end]})
    return 0


async def _read(args: argparse.Namespace) -> int:
    """Each capture's content name as found in its structure file, read back and verified."""
    from archive.cluster import ClusterClient
    from archive.config import load_config
    from archive.errors import DlwebError

    found: dict[int, str] = {}
    errors: dict[int, str] = {}
    async with ClusterClient(load_config(args.config)) as client:

        async def one(index: int) -> None:
            try:
                capture = (
                    await client.closest(url(args.seed, index, args.urls), time_of(index), "exact")
                ).capture
                await client.get_content(capture.content)  # raises unless the hash is right
                found[index] = capture.content
            except DlwebError as exc:
                errors[index] = str(exc)

        gate = asyncio.Semaphore(16)

        async def gated(index: int) -> None:
            async with gate:
                await one(index)

        await asyncio.gather(*(gated(index) for index in args.indexes))
    _print({"found": found, "errors": errors})
    return 0


async def _locate(args: argparse.Namespace) -> int:
    """Who answers a multicast lookup for each name, and the verified content from them."""
    from archive.cluster import ClusterClient
    from archive.config import load_config
    from archive.errors import DlwebError

    result: dict[str, Any] = {}
    async with ClusterClient(load_config(args.config)) as client:
        for name in args.names:
            holders = await client.locate(args.kind, name, cached=False)
            entry: dict[str, Any] = {"holders": holders}
            if args.kind == "content":
                try:
                    data = await client.get_content(name)
                    entry["sha256"] = hashlib.sha256(data).hexdigest()
                except DlwebError as exc:
                    entry["error"] = str(exc)
            result[name] = entry
    _print(result)
    return 0


async def _copies(args: argparse.Namespace) -> int:
    """For each name, the nodes that serve it and the SHA-256 of the bytes each one served."""
    import aiohttp

    result: dict[str, dict[str, str]] = {name: {} for name in args.names}
    gate = asyncio.Semaphore(32)
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:

        async def one(node: str, name: str) -> None:
            async with gate, session.get(f"{node}/{args.kind}/{name}") as answer:
                if answer.status == 200:
                    result[name][node] = hashlib.sha256(await answer.read()).hexdigest()

        await asyncio.gather(*(one(node, name) for node in args.node for name in args.names))
    _print(result)
    return 0


async def _records(args: argparse.Namespace) -> int:
    """For each structure name, the capture times in each node's copy."""
    import aiohttp

    from master.records import read_records

    result: dict[str, dict[str, list[int]]] = {name: {} for name in args.names}
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30)) as session:

        async def one(node: str, name: str) -> None:
            try:
                _, records = await read_records(session, node, name)
            except aiohttp.ClientError:
                return  # the node does not hold it
            result[name][node] = sorted(record["time"] for record in records)

        await asyncio.gather(*(one(node, name) for node in args.node for name in args.names))
    _print(result)
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m tests.deploy.testbed_client")
    actions = parser.add_subparsers(dest="action", required=True)
    get = actions.add_parser("get")
    get.add_argument("urls", nargs="+")
    get.add_argument("--proxy", default=None)
    get.add_argument("--timeout", type=float, default=10)
    get.set_defaults(run=_get)
    insert = actions.add_parser("insert")
    insert.add_argument("--start", type=int, default=0)
    insert.add_argument("--count", type=int, required=True)
    insert.add_argument("--batch", type=int, default=20)
    insert.add_argument("--deadline", type=float, default=20)
    insert.add_argument("--pause-after", type=int, default=0, help="batches before a pause")
    insert.set_defaults(run=_insert)
    read = actions.add_parser("read")
    read.add_argument("indexes", type=int, nargs="*")
    read.set_defaults(run=_read)
    locate = actions.add_parser("locate")
    locate.add_argument("names", nargs="+")
    locate.set_defaults(run=_locate)
    copies = actions.add_parser("copies")
    copies.add_argument("--node", action="append", required=True)
    copies.add_argument("names", nargs="*")
    copies.set_defaults(run=_copies)
    records = actions.add_parser("records")
    records.add_argument("--node", action="append", required=True)
    records.add_argument("names", nargs="*")
    records.set_defaults(run=_records)
    for sub in (insert, read, locate):
        sub.add_argument("-c", "--config", type=Path, required=True)
    for sub in (insert, read):
        sub.add_argument("--seed", type=int, required=True)
        sub.add_argument("--urls", type=int, required=True)
    for sub in (locate, copies):
        sub.add_argument("--kind", choices=("content", "structure"), required=True)
    return parser


def main() -> int:
    args = _parser().parse_args()
    outcome = args.run(args)
    code: int = asyncio.run(outcome) if asyncio.iscoroutine(outcome) else outcome
    return code


if __name__ == "__main__":
    sys.exit(main())
