"""The titles a recorded stream announced, in the search index: read from the chunk logs the
streaming agent stores, each a document at the stream's URL and the time it came on air, and
opened in the stream's player from that moment."""

from pathlib import Path
from urllib.parse import parse_qs, urlsplit

from archive.header_block import encode_header_block, parse_header_block
from archive.streams import LOG_TYPE, REGISTRY_URL, ChunkLog, Point, Title
from archive.structure import Capture, RecordKind
from archive.timestamps import parse_time
from archive.urlkey import structure_name
from harbors.search import _hit_html
from search.errors import NotIndexed
from search.extract import extract_many
from search.index import Hit, create, new_writer, search, version_key
from search.stream_titles import STREAM_TITLE_TYPE, StreamTitles
from search.updating import FileState, page_versions, title_pages

RADIO = "http://radio.test/live.mp3"
ON_AIR = parse_time("2024-03-01T20:15:07.250Z")
HEADER = parse_header_block(
    encode_header_block(200, "OK", [("Content-Type", LOG_TYPE)]), "header block"
)


def chunk_log(url: str, *titles: tuple[int, str]) -> bytes:
    """The log of a minute's chunk of `url` that announced `titles` (time, title)."""
    return ChunkLog(
        url=url,
        recording="r1",
        protocol="icy",
        content_type="audio/mpeg",
        connected=ON_AIR - 30_000_000,
        points=(Point(ON_AIR - 30_000_000, 0.0, 0),),
        end=Point(ON_AIR + 30_000_000, 60.0, 960_000),
        chunk="a" * 64,
        size=960_000,
        titles=tuple(Title(time, 1.0, 16_000, title) for time, title in titles),
    ).encode()


def test_a_chunk_log_gives_each_title_with_the_time_it_came_on_air() -> None:
    log = chunk_log(
        RADIO, (ON_AIR, "Nina Simone - Sinnerman"), (ON_AIR + 9, "  "), (ON_AIR + 10, "Next\nup")
    )
    (got,) = extract_many([(RADIO, HEADER, log)])
    assert got == StreamTitles(((ON_AIR, "Nina Simone - Sinnerman"), (ON_AIR + 10, "Next up")))


def test_a_log_without_titles_another_streams_or_a_broken_one_is_left_out_with_its_reason() -> None:
    cases = [
        (chunk_log(RADIO), "stream log without titles"),
        (chunk_log("http://other.test/", (ON_AIR, "Song")), "stream log of another URL"),
        (b'{"format": "dlweb-stream-log/1", "url": 7}', "unreadable stream log"),
        (b"\xff not json", "unreadable stream log"),
    ]
    got = extract_many([(RADIO, HEADER, payload) for payload, _ in cases])
    assert [g.reason if isinstance(g, NotIndexed) else g for g in got] == [r for _, r in cases]


def test_the_logs_of_a_stream_are_versions_of_its_url_but_not_those_of_the_registry() -> None:
    log = Capture(ON_AIR, "b" * 64, "c" * 64, 200, RecordKind.STREAM_LOG)
    segment = Capture(ON_AIR, "a" * 64, "d" * 64, 200, RecordKind.STREAM_SEGMENT)
    stream = FileState(structure_name(RADIO), RADIO, [segment, log])
    assert [v.capture for v in page_versions(stream)] == [log]
    registry = FileState(structure_name(REGISTRY_URL), REGISTRY_URL, [log])
    assert page_versions(registry) == []


def test_a_title_is_found_at_the_streams_url_and_its_time_and_goes_with_its_log(
    tmp_path: Path,
) -> None:
    capture = Capture(ON_AIR - 30_000_000, "b" * 64, "c" * 64, 200, RecordKind.STREAM_LOG)
    (version,) = page_versions(FileState(structure_name(RADIO), RADIO, [capture]))
    titles = StreamTitles(((ON_AIR, "Nina Simone - Sinnerman"), (ON_AIR + 10**7, "Next up")))
    index = create(tmp_path / "index")
    writer = new_writer(index)
    for page in title_pages(version, titles):
        writer.add_document(page.document())
    writer.commit()
    index.reload()
    (hit,) = search(index, "sinnerman").hits
    assert (hit.url, hit.time, hit.title) == (
        RADIO,
        "2024-03-01T20:15:07Z",
        "Nina Simone - Sinnerman",
    )
    assert hit.content_type == STREAM_TITLE_TYPE
    # Both titles are the log's version: deleted (or replaced) with it.
    writer.delete_documents_by_term("version", version_key(structure_name(RADIO), capture.time))
    writer.commit()
    index.reload()
    assert search(index, "sinnerman OR next").total == 0


def test_a_title_hit_opens_the_streams_player_from_the_moment_it_came_on_air() -> None:
    hit = Hit(
        score=1.0,
        url=RADIO,
        time="2024-03-01T20:15:07Z",
        title="Sinnerman",
        snippet="Sinnerman",
        highlights=[(0, 9)],
        snippet_html="<b>Sinnerman</b>",
        digest="b" * 64,
        content_type=STREAM_TITLE_TYPE,
        status=200,
        lang="",
        simhash=0,
    )
    opened: list[tuple[int, str]] = []

    def opens(at: int, back: str) -> str:
        opened.append((at, back))
        return f"http://date.dlweb/set?{len(opened)}"

    shown = _hit_html(hit, opens)
    assert "play from this moment" in shown and "pages linking here" not in shown
    at, player = opened[0]
    assert at == parse_time("2024-03-01T20:15:07Z")
    parts = urlsplit(player)
    assert (parts.netloc, parts.path) == ("streams.dlweb", "/play")
    assert parse_qs(parts.query) == {"kind": ["audio"], "url": [RADIO]}
