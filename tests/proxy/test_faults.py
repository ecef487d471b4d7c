"""Fault contents: the kind chosen for a URL, and a well-formed body of each kind."""

import io
import re
import struct
import zipfile
from xml.etree import ElementTree

import pypdf
import pytest

from proxy.faults import DOCX, fault, kind_of

REASON = "it was never captured"
ODD_URL = "http://old.example/a(b)c\\d{e}é.{ext}"


def body_of(url: str, accept: str = "*/*", status: int = 404) -> tuple[bytes, str]:
    return fault(status, url, accept, REASON)


@pytest.mark.parametrize(
    "url",
    [
        "http://old.example/a.html",
        "http://old.example/A.HTM",
        "http://old.example/dir/",
        "http://a",
    ],
)
def test_htm_html_and_a_trailing_slash_are_html_whatever_the_accept(url: str) -> None:
    assert kind_of(url, "application/json") == "html"


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        ("/report.pdf", "pdf"),
        ("/letter.doc", "rtf"),
        ("/letter.rtf", "rtf"),
        ("/letter.docx", "docx"),
        ("/intro.swf", "flash"),
        ("/logo.png", "image"),
        ("/data.json?x=.pdf", "json"),
    ],
)
def test_the_extension_is_chosen_before_the_accept(path: str, kind: str) -> None:
    assert kind_of(f"http://old.example{path}", "text/html,application/pdf") == kind


@pytest.mark.parametrize(
    ("accept", "kind"),
    [
        ("application/pdf", "pdf"),
        ("application/msword", "rtf"),
        (DOCX, "docx"),
        ("application/x-shockwave-flash, */*", "flash"),
        ("text/html,application/xhtml+xml,*/*;q=0.8", "html"),
        ("*/*", "text"),
    ],
)
def test_accept_chooses_when_the_extension_says_nothing(accept: str, kind: str) -> None:
    assert kind_of("http://old.example/download?id=7", accept) == kind


@pytest.mark.parametrize(
    ("ext", "content_type"),
    [
        ("html", "text/html; charset=utf-8"),
        ("png", "image/svg+xml"),
        ("js", "application/javascript"),
        ("css", "text/css"),
        ("json", "application/json"),
        ("txt", "text/plain; charset=utf-8"),
        ("pdf", "application/pdf"),
        ("doc", "application/rtf"),
        ("docx", DOCX),
        ("swf", "application/x-shockwave-flash"),
    ],
)
def test_every_kind_has_its_content_type_and_survives_odd_characters(
    ext: str, content_type: str
) -> None:
    url = ODD_URL.replace("{ext}", ext) + "?q=\udcff\x00"
    body, served_type = body_of(url)
    assert served_type == content_type and body


def pdf_objects(pdf: bytes) -> list[int]:
    """The offsets the xref table gives; checks the trailer that leads to it on the way."""
    assert pdf.startswith(b"%PDF-1.") and pdf.endswith(b"%%EOF\n")
    trailer = re.search(rb"trailer\n<< /Size (\d+) /Root 1 0 R >>\nstartxref\n(\d+)\n%%EOF\n$", pdf)
    assert trailer is not None
    count, xref = int(trailer[1]), int(trailer[2])
    assert pdf[xref:].startswith(b"xref\n0 %d\n0000000000 65535 f \n" % count)
    entries = pdf[xref + len(b"xref\n0 %d\n" % count) :].split(b"trailer")[0]
    rows = [entries[i : i + 20] for i in range(0, len(entries), 20)]
    assert len(rows) == count and all(re.fullmatch(rb"\d{10} \d{5} [fn] \n", row) for row in rows)
    return [int(row[:10]) for row in rows[1:]]


def test_the_pdf_has_each_object_where_its_xref_says_and_an_exact_stream_length() -> None:
    pdf, _ = body_of("http://old.example/report.pdf")
    offsets = pdf_objects(pdf)
    assert len(offsets) == 5
    for number, offset in enumerate(offsets, 1):
        assert pdf[offset:].startswith(b"%d 0 obj\n" % number)
    stream = re.search(rb"<< /Length (\d+) >>\nstream\n(.*)\nendstream", pdf, re.DOTALL)
    assert stream is not None and len(stream[2]) == int(stream[1])
    assert b"/Subtype /Type1 /BaseFont /Helvetica" in pdf


def test_the_pdf_says_what_is_missing_and_why_in_ascii_with_specials_escaped() -> None:
    url = ODD_URL.replace("{ext}", "pdf")
    pdf, _ = body_of(url, status=500)
    assert pdf.isascii() and b"a\\(b\\)c\\\\d{e}?.pdf" in pdf
    strings = re.findall(rb"\(((?:[^\\()]|\\.)*)\) Tj", pdf)
    lines = [re.sub(rb"\\(.)", rb"\1", string).decode() for string in strings]
    assert lines[0] == "500: missing from the archive"
    missing = f"dlweb: {url.replace('é', '?')} is missing from the archive ({REASON})."
    assert " ".join(lines[1:-1]) == missing
    assert lines[-1] == "Pick another date at http://date.dlweb/."


def test_the_pdf_page_fits_a_very_long_url() -> None:
    pdf, _ = body_of("http://old.example/" + "x" * 20_000 + ".pdf")
    lines = re.findall(rb"\((.*?)\) Tj", pdf)
    assert max(len(line.replace(b"\\", b"")) for line in lines) <= 80
    assert len(lines) <= 42


def test_the_pdf_reads_with_pypdf() -> None:
    pdf, _ = body_of("http://old.example/report.pdf")
    reader = pypdf.PdfReader(io.BytesIO(pdf), strict=True)
    assert len(reader.pages) == 1
    assert "report.pdf is missing from the archive" in reader.pages[0].extract_text()


def test_the_docx_opens_as_a_zip_whose_document_says_what_is_missing() -> None:
    docx, _ = body_of(ODD_URL.replace("{ext}", "docx"))
    with zipfile.ZipFile(io.BytesIO(docx)) as package:
        assert package.testzip() is None
        assert package.namelist() == ["[Content_Types].xml", "_rels/.rels", "word/document.xml"]
        types = ElementTree.fromstring(package.read("[Content_Types].xml"))
        rels = ElementTree.fromstring(package.read("_rels/.rels"))
        document = ElementTree.fromstring(package.read("word/document.xml"))
    overrides = {o.get("PartName"): o.get("ContentType") for o in types if "Override" in o.tag}
    assert overrides == {"/word/document.xml": DOCX.replace(".document", ".document.main+xml")}
    assert [r.get("Target") for r in rels] == ["word/document.xml"]
    text = [t.text for t in document.iter() if t.tag.endswith("}t")]
    assert text[0] == "404: missing from the archive"
    assert (
        text[1]
        == f"dlweb: {ODD_URL.replace('{ext}', 'docx')} is missing from the archive ({REASON})."
    )


def test_the_same_fault_is_the_same_docx_bytes() -> None:
    assert body_of("http://old.example/a.docx") == body_of("http://old.example/a.docx")


def test_the_rtf_starts_its_header_and_escapes_specials_and_other_than_ascii() -> None:
    rtf, _ = body_of(ODD_URL.replace("{ext}", "doc"))
    assert rtf.startswith(b"{\\rtf1") and rtf.isascii()
    assert (
        b"a(b)c\\\\d\\{e\\}\\u233?.doc is missing from the archive (it was never captured)." in rtf
    )
    unescaped = re.sub(rb"\\[\\{}]", b"", rtf)
    assert unescaped.count(b"{") == unescaped.count(b"}")
    assert rtf.rstrip().endswith(b"}")


def test_rtf_writes_characters_past_the_bmp_as_two_signed_utf16_units() -> None:
    rtf, _ = body_of("http://old.example/\U0001f600.rtf")
    assert b"\\u-10179?\\u-8704?.rtf" in rtf


def swf_tags(swf: bytes) -> list[tuple[int, bytes]]:
    """The tags of an uncompressed movie; checks the header and that End closes the file."""
    assert swf[:3] == b"FWS"
    version, length = struct.unpack_from("<BI", swf, 3)
    assert version >= 8 and length == len(swf)
    rect_bits = 5 + 4 * (swf[8] >> 3)
    position = 8 + (rect_bits + 7) // 8
    rate, frames = struct.unpack_from("<HH", swf, position)
    assert rate > 0 and frames == 1
    position += 4
    tags = []
    while True:
        code_and_length = struct.unpack_from("<H", swf, position)[0]
        code, size = code_and_length >> 6, code_and_length & 0x3F
        position += 2
        if size == 0x3F:
            size = struct.unpack_from("<I", swf, position)[0]
            position += 4
        tags.append((code, swf[position : position + size]))
        position += size
        if code == 0:
            assert position == len(swf)
            return tags


def test_the_swf_is_an_uncompressed_movie_whose_length_field_is_its_size() -> None:
    swf, _ = body_of("http://old.example/intro.swf")
    tags = swf_tags(swf)
    assert [code for code, _ in tags] == [69, 77, 9, 1, 0]  # attributes, metadata, color, frame
    assert tags[0][1][0] & 0x10  # the attributes announce the metadata
    assert b"intro.swf is missing from the archive" in tags[1][1]
    assert len(tags[2][1]) == 3


def test_the_swf_frame_is_240_by_40_pixels() -> None:
    swf, _ = body_of("http://old.example/intro.swf")
    size = swf[8] >> 3
    bits = bin(int.from_bytes(swf[8:16], "big"))[2:].zfill(64)[5 : 5 + 4 * size]
    fields = [int(bits[i : i + size], 2) for i in range(0, 4 * size, size)]
    assert fields == [0, 240 * 20, 0, 40 * 20]
