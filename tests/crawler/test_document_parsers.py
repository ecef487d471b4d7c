"""The parsers of PDF, DOCX, DOC and RTF documents: on files LibreOffice makes here from one source
with two hyperlinks and a linked picture, on damaged and hostile files, and in a crawl whose
documents link to pages that are then fetched, archived and replayed."""

import asyncio
import io
import random
import subprocess
import threading
import time
import tracemalloc
import zipfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pypdf
import pytest
from aiohttp import web
from pypdf.annotations import Link

from archive.cluster import ClusterClient
from archive.config import ClusterConfig
from crawler.links import LinkKind
from crawler.parsers import ParseResult, parse, parser_for
from crawler.parsers.documents import MAX_SECONDS, field_link
from crawler.parsers.msdoc import MsDocParser
from crawler.parsers.ooxml import DocxParser
from crawler.parsers.ooxml import sniff as sniff_docx
from crawler.parsers.pdf import PdfParser
from crawler.parsers.rtf import RtfParser
from deploy.testing.cluster import Cluster
from deploy.testing.web_server import WebServer, answering
from tests.proxy.conftest import Proxy, through

from .conftest import run_crawler

PAGE, COMPONENT = LinkKind.PAGE, LinkKind.COMPONENT
FORMATS = ("pdf", "docx", "doc", "rtf")
CONTENT_TYPES = {
    "pdf": "application/pdf",
    "docx": "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    "doc": "application/msword",
    "rtf": "application/rtf",
}
PARSERS = {"pdf": PdfParser, "docx": DocxParser, "doc": MsDocParser, "rtf": RtfParser}
# A picture linked, not embedded, stays a link in DOCX and DOC; a PDF draws it, and LibreOffice
# embeds it in RTF.
LINKED_PICTURE = ("docx", "doc")
QUICK = MAX_SECONDS + 1.0  # seconds a hostile document may take: its deadline, with a margin
MEMORY = 64 * 1024 * 1024  # bytes a hostile document may allocate
CONVERT_TIMEOUT = 180

# One paragraph with two hyperlinks, one with a picture linked from the site; {base} is the
# folder of the site that the document's links lead to.
SOURCE = """<?xml version="1.0" encoding="UTF-8"?>
<office:document xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0"
 xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0"
 xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0"
 xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0"
 xmlns:xlink="http://www.w3.org/1999/xlink"
 office:version="1.3" office:mimetype="application/vnd.oasis.opendocument.text">
 <office:body><office:text>
  <text:p>Documents hold links: see
   <text:a xlink:type="simple" xlink:href="{base}/one.html">the first page</text:a> and
   <text:a xlink:type="simple" xlink:href="{base}/two.html">the second page</text:a>.</text:p>
  <text:p>A linked picture:
   <draw:frame draw:name="picture" text:anchor-type="as-char" svg:width="1cm" svg:height="1cm">
    <draw:image xlink:href="{base}/picture.png" xlink:type="simple" xlink:show="embed"
     xlink:actuate="onLoad"/></draw:frame></text:p>
 </office:text></office:body>
</office:document>
"""
# A 1x1 PNG.
PICTURE = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010802000000907753de"
    "0000000c4944415478da63f8ffff3f0005fe02fea7d6a5e20000000049454e44ae426082"
)
START_PAGE = "<html><body><h1>Documents</h1>{links}</body></html>"
PAGE_HTML = "<html><body><p>A page a document links to.</p></body></html>"


@dataclass
class DocumentSite:
    """A site whose start page links to one document of each format, each document linking to
    pages of its own folder (/pdf/one.html...) and to a picture there."""

    files: dict[str, bytes] = field(default_factory=dict)
    asked: list[str] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    async def handle(self, request: web.Request) -> web.Response:
        with self._lock:
            self.asked.append(request.path)
        folder, _, name = request.path.strip("/").partition("/")
        if request.path == "/":
            links = "".join(f'<p><a href="/document.{kind}">{kind}</a></p>' for kind in FORMATS)
            return web.Response(text=START_PAGE.format(links=links), content_type="text/html")
        if folder.startswith("document.") and folder[9:] in self.files:
            kind = folder[9:]
            return web.Response(body=self.files[kind], content_type=CONTENT_TYPES[kind])
        if folder in FORMATS and name in ("one.html", "two.html"):
            return web.Response(text=PAGE_HTML, content_type="text/html")
        if folder in FORMATS and name == "picture.png":
            return web.Response(body=PICTURE, content_type="image/png")
        return web.Response(status=404, text="none")

    def requested(self) -> list[str]:
        with self._lock:
            return list(self.asked)


@dataclass
class Documents:
    base: str
    site: DocumentSite

    def url(self, kind: str) -> str:
        return f"{self.base}/document.{kind}"

    def data(self, kind: str) -> bytes:
        return self.site.files[kind]


def convert(folder: Path, base: str) -> dict[str, bytes]:
    """The source written for each format, its links into that format's folder of the site,
    converted by LibreOffice with a profile of its own."""
    profile = (folder / "profile").as_uri()
    made = {}
    for kind in FORMATS:
        source = folder / f"{kind}.fodt"
        source.write_text(SOURCE.format(base=f"{base}/{kind}"))
        done = subprocess.run(
            ["soffice", f"-env:UserInstallation={profile}", "--headless", "--convert-to", kind]
            + ["--outdir", str(folder / "out"), str(source)],
            capture_output=True,
            text=True,
            timeout=CONVERT_TIMEOUT,
        )
        converted = folder / "out" / f"{kind}.{kind}"
        assert converted.exists(), done.stdout + done.stderr
        made[kind] = converted.read_bytes()
    return made


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Documents]:
    """The site, serving while LibreOffice converts (it fetches the linked picture) and after."""
    site = DocumentSite()
    with WebServer(answering(site.handle)) as server:
        site.files.update(convert(tmp_path_factory.mktemp("documents"), server.base))
        yield Documents(server.base, site)


def expected(documents: Documents, kind: str) -> list[tuple[str, LinkKind, str]]:
    folder = f"{documents.base}/{kind}"
    links = [
        (f"{folder}/one.html", PAGE, "the first page"),
        (f"{folder}/two.html", PAGE, "the second page"),
    ]
    if kind in LINKED_PICTURE:
        links.append((f"{folder}/picture.png", COMPONENT, ""))
    return links


def found(result: ParseResult | None) -> list[tuple[str, LinkKind, str]]:
    assert result is not None, "no parser for the document"
    return [(link.url, link.kind, link.text) for link in result.links]


def timed(kind: str, data: bytes, url: str = "http://docs.test/document") -> ParseResult:
    """The parse of a document of the format, checked to take little time and memory."""
    tracemalloc.start()
    started = time.monotonic()
    try:
        result = parse(f"{url}.{kind}", CONTENT_TYPES[kind], data)
        elapsed = time.monotonic() - started
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result is not None, "no parser for the document"
    assert elapsed < QUICK and peak < MEMORY, (elapsed, peak)
    return result


# -- what LibreOffice writes --------------------------------------------------------------------


@pytest.mark.parametrize("kind", FORMATS)
def test_each_format_gives_its_hyperlinks_as_pages_and_its_linked_picture_as_a_component(
    documents: Documents, kind: str
) -> None:
    result = parse(documents.url(kind), CONTENT_TYPES[kind], documents.data(kind))
    assert found(result) == expected(documents, kind)
    assert result is not None and result.problems == []
    assert "Documents hold links: see the first page and the second page." in " ".join(
        result.text.split()
    )


@pytest.mark.parametrize("kind", FORMATS)
def test_a_document_without_a_media_type_is_read_by_its_suffix(
    documents: Documents, kind: str
) -> None:
    parser = parser_for(documents.url(kind), "application/octet-stream", b"")
    assert isinstance(parser, PARSERS[kind])


@pytest.mark.parametrize("kind", ("pdf", "doc", "rtf"))
def test_a_document_under_any_name_and_media_type_is_known_by_its_first_bytes(
    documents: Documents, kind: str
) -> None:
    head = documents.data(kind)[:512]
    assert isinstance(parser_for("http://docs.test/get?id=1", "text/plain", head), PARSERS[kind])


def _rezipped(data: bytes, first: str, replace: dict[str, bytes] | None = None) -> bytes:
    """A zip's members written again, `first` first, some of them replaced."""
    replace = replace or {}
    with zipfile.ZipFile(io.BytesIO(data)) as source:
        names = sorted(source.namelist(), key=lambda name: name != first)
        out = io.BytesIO()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as target:
            for name in names:
                target.writestr(name, replace.get(name, source.read(name)))
    return out.getvalue()


def test_a_docx_is_known_by_its_content_types_and_a_spreadsheet_is_not(
    documents: Documents,
) -> None:
    word = _rezipped(documents.data("docx"), "[Content_Types].xml")
    assert sniff_docx(word[:512])
    assert isinstance(parser_for("http://docs.test/get", None, word[:512]), DocxParser)
    types = b'<Types><Override PartName="/xl/workbook.xml" ContentType="application/vnd.openxmlformats-officedocument.spreadsheetml.sheet.main+xml"/></Types>'
    sheet = _rezipped(word, "[Content_Types].xml", {"[Content_Types].xml": types})
    assert not sniff_docx(sheet[:512])


WORD_BODY = """<?xml version="1.0" encoding="UTF-8"?>{doctype}
<w:document xmlns:w="http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>
<w:p><w:fldSimple w:instr=" HYPERLINK &quot;http://a.test/simple&quot; ">
 <w:r><w:t>simple</w:t></w:r></w:fldSimple></w:p>
<w:p><w:r><w:fldChar w:fldCharType="begin"/></w:r><w:r><w:instrText> INCLUDEPICTURE </w:instrText>
 </w:r><w:r><w:instrText>"http://a.test/p.png" \\d</w:instrText></w:r>
 <w:r><w:fldChar w:fldCharType="separate"/></w:r><w:r><w:t>shown</w:t></w:r>
 <w:r><w:fldChar w:fldCharType="end"/></w:r></w:p>
<w:p><w:hyperlink w:anchor="bookmark"><w:r><w:t>inside{entity}</w:t></w:r></w:hyperlink></w:p>
</w:body></w:document>"""
# Each entity ten of the one before: &e9; would be 10^9 characters, if it were expanded.
ENTITY_BOMB = "<!DOCTYPE w:document [<!ENTITY e0 'lol'>{}]>".format(
    "".join(f"<!ENTITY e{n} '{f'&e{n - 1};' * 10}'>" for n in range(1, 10))
)


def test_docx_field_codes_give_links_and_a_bookmark_link_none(documents: Documents) -> None:
    body = WORD_BODY.format(doctype="", entity="").encode()
    data = _rezipped(documents.data("docx"), "", {"word/document.xml": body})
    result = timed("docx", data)
    assert found(result)[-2:] == [
        ("http://a.test/simple", PAGE, ""),
        ("http://a.test/p.png", COMPONENT, ""),
    ]
    assert result.text == "simple\nshown\ninside\n" and result.problems == []


def test_an_entity_bomb_in_a_docx_is_refused_not_expanded(documents: Documents) -> None:
    body = WORD_BODY.format(doctype=ENTITY_BOMB, entity="&e9;").encode()
    data = _rezipped(documents.data("docx"), "", {"word/document.xml": body})
    result = timed("docx", data, documents.url("docx")[:-5])
    assert result.problems == ["docx: malformed XML in word/document.xml"]
    assert result.text == ""
    assert found(result) == [(url, kind, "") for url, kind, _ in expected(documents, "docx")]


@pytest.mark.parametrize(
    ("instruction", "link"),
    [
        (' HYPERLINK "http://a.test/x" ', ("http://a.test/x", PAGE)),
        ('HYPERLINK "http://a.test/x" \\o "a tip" \\t "_blank"', ("http://a.test/x", PAGE)),
        ('HYPERLINK \\l "bookmark"', None),
        ('HYPERLINK \\l "bookmark" "http://a.test/y"', ("http://a.test/y", PAGE)),
        ('INCLUDEPICTURE  "http://a.test/p.png" \\d', ("http://a.test/p.png", COMPONENT)),
        ("hyperlink http://a.test/bare", ("http://a.test/bare", PAGE)),
        ('PAGEREF "http://a.test/z"', None),
        ("", None),
    ],
    ids=(
        "quoted",
        "switches",
        "bookmark",
        "bookmark-then-url",
        "picture",
        "bare",
        "other",
        "empty",
    ),
)
def test_field_codes_give_the_target_of_hyperlinks_and_pictures_only(
    instruction: str, link: tuple[str, LinkKind] | None
) -> None:
    assert field_link(instruction) == link


def test_rtf_pictures_fields_and_escapes_are_read_and_tables_skipped() -> None:
    document = (
        rb"{\rtf1\ansi\ansicpg1252{\fonttbl{\f0 Times;}}{\colortbl;\red0\green0\blue0;}"
        rb"{\*\generator Hand;}Caf\'e9 \u8364? costs{\pict\pngblip 89504e47}"
        rb'{\field{\*\fldinst INCLUDEPICTURE \\d "http://a.test/p.png"}{\fldrslt }}'
        rb'{\field{\*\fldinst{ HYPERLINK "http://a.test/x" }}{\fldrslt{\b the x page}}}\par'
        rb"{\*\unknown http://a.test/hidden}\bin5 }}}}} end}"
    )
    result = timed("rtf", document)
    assert found(result) == [
        ("http://a.test/p.png", COMPONENT, ""),
        ("http://a.test/x", PAGE, "the x page"),
    ]
    assert result.text == "Caf\u00e9 \u20ac coststhe x page\n end"


@pytest.mark.parametrize(
    ("kind", "magic"),
    [
        ("pdf", b"%PDF-1.7\n"),
        ("docx", b"PK\x03\x04"),
        ("doc", b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1"),
        ("rtf", b"{\\rtf1 "),
    ],
    ids=FORMATS,
)
def test_random_bytes_after_a_format_s_magic_give_no_link(kind: str, magic: bytes) -> None:
    chunks = [random.Random(kind).randbytes(4096) for _ in range(64)]
    data = magic + b" http://a.test/bare ".join(chunks)
    result = timed(kind, data)
    assert result.links == []
    if kind != "rtf":  # to an RTF reader, random bytes are text
        assert result.problems and result.problems[0].startswith(f"{kind}: "), result.problems


# -- damaged and hostile documents --------------------------------------------------------------


def _bomb(documents: Documents, hide_size: bool) -> bytes:
    """The converted DOCX with a main part of 1 GiB of zeros, its size told or hidden."""
    out = io.BytesIO()
    zeros = bytes(1024 * 1024)
    with (
        zipfile.ZipFile(io.BytesIO(documents.data("docx"))) as source,
        zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as target,
    ):
        for name in source.namelist():
            if name != "word/document.xml":
                target.writestr(name, source.read(name))
        with target.open("word/document.xml", "w") as member:
            for _ in range(1024):
                member.write(zeros)
    data = bytearray(out.getvalue())
    if hide_size:  # the central directory's uncompressed size says 1000 bytes
        entry = data.rfind(b"PK\x01\x02")
        assert data[entry + 46 : entry + 63] == b"word/document.xml"
        data[entry + 24 : entry + 28] = (1000).to_bytes(4, "little")
    return bytes(data)


@pytest.mark.parametrize(
    ("hide_size", "problem"),
    [
        (False, "docx: member too large: word/document.xml (1073741824 bytes)"),
        (True, "docx: member unreadable: word/document.xml (BadZipFile)"),
    ],
    ids=("size-told", "size-hidden"),
)
def test_a_zip_bomb_in_a_docx_is_refused_and_its_relationships_still_read(
    documents: Documents, hide_size: bool, problem: str
) -> None:
    result = timed("docx", _bomb(documents, hide_size), documents.url("docx")[:-5])
    assert result.problems[0] == problem
    assert found(result) == [(url, kind, "") for url, kind, _ in expected(documents, "docx")]


def test_a_docx_of_too_many_members_is_refused() -> None:
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w") as archive:
        for number in range(6000):
            archive.writestr(f"word/media/{number}.bin", b"")
    result = timed("docx", out.getvalue())
    assert result.problems == ["docx: more than 5000 members"]


def _pdf(*objects: bytes, trailer: bytes = b"") -> bytes:
    """A PDF of the objects numbered from 1, the first its catalog, with a true xref table."""
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, 1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n%s\nendobj\n" % (number, body))
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    out.write(b"".join(b"%010d 00000 n \n" % offset for offset in offsets))
    out.write(b"trailer\n<</Size %d/Root 1 0 R%s>>\n" % (len(objects) + 1, trailer))
    out.write(b"startxref\n%d\n%%%%EOF\n" % xref)
    return out.getvalue()


LINKED_PAGE = b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 10 10]/Annots[<</Subtype/Link/A<</S/URI/URI(http://a.test/p.html)>>>>]>>"
CATALOG = b"<</Type/Catalog/Pages 2 0 R>>"
ONE_PAGE = b"<</Type/Pages/Count 1/Kids[3 0 R]>>"


def _xref_at(pdf: bytes) -> int:
    return int(pdf.rsplit(b"startxref\n", 1)[1].split()[0])


def _xref_loop() -> bytes:
    pdf = _pdf(CATALOG, ONE_PAGE, LINKED_PAGE)
    return pdf.replace(b"/Root 1 0 R", b"/Root 1 0 R/Prev %d" % _xref_at(pdf))


def _broken_xref() -> bytes:
    pdf = _pdf(CATALOG, ONE_PAGE, LINKED_PAGE)
    return pdf.replace(b"startxref\n%d" % _xref_at(pdf), b"startxref\n999999")


@pytest.mark.parametrize(
    ("make", "problem"),
    [
        (_xref_loop, "pdf: repaired: 'Circular xref chain detected"),
        (_broken_xref, "pdf: repaired: 'incorrect startxref pointer"),
    ],
    ids=("xref-loop", "broken-xref"),
)
def test_a_pdf_with_a_looping_or_broken_xref_is_repaired_and_says_so(
    make: Callable[[], bytes], problem: str
) -> None:
    result = timed("pdf", make())
    assert result.problems and result.problems[0].startswith(problem), result.problems
    assert found(result) == [("http://a.test/p.html", PAGE, "")]


def test_a_pdf_of_objects_nested_100000_deep_is_unreadable() -> None:
    nested = b"<</Type/Catalog/Pages 2 0 R/Deep " + b"[" * 100_000 + b"]" * 100_000 + b">>"
    result = timed("pdf", _pdf(nested, ONE_PAGE, LINKED_PAGE))
    assert result.links == [] and "pdf: unreadable (PdfReadError)" in result.problems


def test_a_pdf_of_many_pages_is_read_up_to_its_500th() -> None:
    pages = 2000
    kids = b" ".join(b"%d 0 R" % (3 + number) for number in range(pages))
    tree = b"<</Type/Pages/Count 1000000000/Kids[%s]>>" % kids
    result = timed("pdf", _pdf(CATALOG, tree, *[LINKED_PAGE] * pages))
    assert result.problems == ["pdf: pages after the first 500 not read"]
    assert len(result.links) == 500


@pytest.mark.parametrize(
    ("user", "readable"), [("secret", False), ("", True)], ids=("user-password", "owner-only")
)
def test_an_encrypted_pdf_is_read_only_without_a_user_password(user: str, readable: bool) -> None:
    writer = pypdf.PdfWriter()
    writer.add_blank_page(100, 100)
    writer.add_annotation(0, Link(rect=(0, 0, 50, 50), url="http://a.test/"))
    writer.encrypt(user, "owner", algorithm="AES-256")
    out = io.BytesIO()
    writer.write(out)
    result = timed("pdf", out.getvalue())
    if readable:
        assert found(result) == [("http://a.test/", PAGE, "")] and result.problems == []
    else:
        assert result.links == [] and result.problems == ["pdf: encrypted"]


def test_a_truncated_doc_is_searched_for_its_field_codes_only(documents: Documents) -> None:
    data = documents.data("doc")
    for size in (100, len(data) // 2, len(data) - 1000):
        result = timed("doc", data[:size], documents.url("doc")[:-4])
        assert result.problems == ["doc: damaged or truncated OLE file, searched for field codes"]
        wanted = [(url, kind, "") for url, kind, _ in expected(documents, "doc")]
        assert set(found(result)) <= set(wanted)


def test_an_encrypted_doc_is_refused(documents: Documents) -> None:
    data = bytearray(documents.data("doc"))
    fib = next(at for at in range(512, len(data), 512) if data[at : at + 2] == b"\xec\xa5")
    data[fib + 0x0B] |= 0x01  # fEncrypted
    result = timed("doc", bytes(data))
    assert result.links == [] and result.problems == ["doc: encrypted"]


def test_an_rtf_nested_100000_groups_deep_is_read_around_its_nesting() -> None:
    document = (
        b"{\\rtf1 before "
        + b"{" * 100_000
        + b"deep"
        + b"}" * 100_000
        + b'{\\field{\\*\\fldinst HYPERLINK "http://a.test/after"}{\\fldrslt after}}}'
    )
    result = timed("rtf", document)
    assert result.problems == ["rtf: groups nested deeper than 1000"]
    assert found(result) == [("http://a.test/after", PAGE, "after")]
    assert result.text == "before after"


# -- in a crawl ---------------------------------------------------------------------------------


async def captured(config: ClusterConfig, urls: list[str]) -> dict[str, int]:
    """How many captures the archive holds of each URL."""
    async with ClusterClient(config) as client:
        return {url: len(await client.captures(url)) for url in urls}


def test_links_inside_documents_are_crawled_archived_and_replayed(
    documents: Documents,
    cluster_factory: Callable[..., Cluster],
    proxy_factory: Callable[..., Proxy],
    tmp_path: Path,
) -> None:
    site = documents.site
    site.asked.clear()
    cluster = cluster_factory(nodes=1, replicas=1)
    done = run_crawler(
        cluster, tmp_path / "report.json", tmp_path / "work", "--delay", "0", documents.base + "/"
    )
    linked = [url for kind in FORMATS for url, _, _ in expected(documents, kind)]
    asked = set(site.requested())
    assert {url.removeprefix(documents.base) for url in linked} <= asked, done.output
    archived = [documents.url(kind) for kind in FORMATS] + linked
    assert all(asyncio.run(captured(cluster.config, archived)).values()), done.output
    assert "malformed" not in done.report["errors"]

    proxy = proxy_factory(cluster)
    site.asked.clear()
    for kind in FORMATS:
        status, headers, body = through(proxy, "GET", documents.url(kind))
        assert status == 200 and body == documents.data(kind), (kind, status, headers)
        assert headers["content-type"].startswith(CONTENT_TYPES[kind])
    assert site.requested() == [], "the replay reached the live site"
