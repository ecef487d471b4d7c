"""Fault contents: what the proxy sends for a URL the archive lacks (404) or cannot read (500).

The body has the type the browser expects where it lands (a page, an image, a script, a style
sheet, JSON, text, a PDF, a Word document, a Flash movie), so a missing image shows as an image
saying it is missing rather than breaking the page, and every kind says plainly that the resource
is missing from the archive. The kind comes from the URL's extension, else from its Accept.
"""

import html
import io
import json
import struct
import textwrap
import zipfile
from collections.abc import Callable
from urllib.parse import urlsplit
from xml.sax.saxutils import escape as xml_escape

DOCX = "application/vnd.openxmlformats-officedocument.wordprocessingml.document"
_ADVICE = "Pick another date at http://date.dlweb/."

_EXTENSIONS = {
    "html": (".html", ".htm", "/"),
    "image": (".png", ".jpg", ".jpeg", ".gif", ".webp", ".svg", ".ico", ".bmp", ".avif"),
    "script": (".js", ".mjs"),
    "style": (".css",),
    "json": (".json",),
    "text": (".txt",),
    "pdf": (".pdf",),
    "docx": (".docx",),
    "rtf": (".doc", ".rtf"),
    "flash": (".swf",),
}
# The first kind whose mark is in Accept wins: browsers put text/html in every navigation's.
_ACCEPT_MARKS = {
    "html": ("text/html",),
    "image": ("image/",),
    "style": ("text/css",),
    "script": ("javascript", "ecmascript"),
    "json": ("application/json",),
    "pdf": ("application/pdf",),
    "docx": (DOCX,),
    "rtf": ("application/msword", "application/rtf", "text/rtf"),
    "flash": ("application/x-shockwave-flash",),
}


def kind_of(url: str, accept: str) -> str:
    """What sort of resource the client wants: by the URL's extension, else its Accept."""
    try:
        path = urlsplit(url).path.lower() or "/"
    except ValueError:  # a host urlsplit cannot read, such as "[": the path alone
        path = url.partition("?")[0].lower()
    for kind, endings in _EXTENSIONS.items():
        if path.endswith(endings):
            return kind
    accept = accept.lower()
    for kind, marks in _ACCEPT_MARKS.items():
        if any(mark in accept for mark in marks):
            return kind
    return "text"


def fault(status: int, url: str, accept: str, reason: str) -> tuple[bytes, str]:
    """The body and Content-Type of a fault content."""
    message = f"dlweb: {url} is missing from the archive ({reason})."
    # Lone surrogates (undecodable bytes of a URL) and control characters cannot be written.
    message = "".join(char if char.isprintable() else "?" for char in message)
    maker, content_type = _MAKERS[kind_of(url, accept)]
    return maker(status, message), content_type


def _title(status: int) -> str:
    return f"{status}: missing from the archive"


def _html(status: int, message: str) -> bytes:
    return (
        f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>{_title(status)}</title>'
        f"</head><body><h1>Missing from the archive</h1><p>{html.escape(message)}</p>"
        f'<p>Pick another date at <a href="http://date.dlweb/">date.dlweb</a>.</p></body></html>\n'
    ).encode()


def _image(status: int, message: str) -> bytes:
    return (
        b'<svg xmlns="http://www.w3.org/2000/svg" width="240" height="40">'
        b'<rect width="100%" height="100%" fill="#eee" stroke="#c00"/>'
        b'<text x="8" y="25" font-size="13" fill="#c00">missing from the archive</text></svg>'
    )


def _comment(status: int, message: str) -> bytes:
    return f"/* {message} */\n".encode()


def _json(status: int, message: str) -> bytes:
    return json.dumps({"error": message, "status": status}).encode()


def _text(status: int, message: str) -> bytes:
    return (message + "\n").encode()


def _pdf(status: int, message: str) -> bytes:
    """One A4 page in Helvetica: the title, then the message wrapped to the page's width."""
    lines = [*textwrap.wrap(message, 80)[:40], _ADVICE]
    body = "".join(f" T* ({_pdf_string(line)}) Tj" for line in lines)
    stream = f"BT /F1 16 Tf 56 780 Td ({_title(status)}) Tj /F1 11 Tf 16 TL T*{body} ET".encode()
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 595 842]"
        b" /Resources << /Font << /F1 4 0 R >> >> /Contents 5 0 R >>",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
        b"<< /Length %d >>\nstream\n%s\nendstream" % (len(stream), stream),
    ]
    pdf = bytearray(b"%PDF-1.4\n")
    offsets = []
    for number, content in enumerate(objects, 1):
        offsets.append(len(pdf))
        pdf += b"%d 0 obj\n%s\nendobj\n" % (number, content)
    xref = len(pdf)
    pdf += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    pdf += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    pdf += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (
        len(objects) + 1,
        xref,
    )
    return bytes(pdf)


def _pdf_string(text: str) -> str:
    """The inside of a PDF literal string, in ASCII (others become ?)."""
    ascii_text = text.encode("ascii", "replace").decode()
    return ascii_text.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")


def _rtf(status: int, message: str) -> bytes:
    return (
        "{\\rtf1\\ansi\\deff0{\\fonttbl{\\f0\\fswiss Helvetica;}}\\f0\\fs22\n"
        f"{{\\b {_rtf_string(_title(status))}}}\\par\n"
        f"{_rtf_string(message)}\\par\n{_rtf_string(_ADVICE)}\\par\n}}\n"
    ).encode()


def _rtf_string(text: str) -> str:
    """RTF text: \\, { and } escaped, others than printable ASCII as UTF-16 units (\\uN?)."""
    out = []
    for char in text:
        if char in "\\{}":
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            data = char.encode("utf-16-le")
            out.extend(f"\\u{unit}?" for unit in struct.unpack(f"<{len(data) // 2}h", data))
    return "".join(out)


_DOCX_TYPES = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Types xmlns="http://schemas.openxmlformats.org/package/2006/content-types">'
    '<Default Extension="rels"'
    ' ContentType="application/vnd.openxmlformats-package.relationships+xml"/>'
    '<Default Extension="xml" ContentType="application/xml"/>'
    '<Override PartName="/word/document.xml" ContentType="application/vnd.openxmlformats-'
    'officedocument.wordprocessingml.document.main+xml"/>'
    "</Types>"
)
_DOCX_RELS = (
    '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n'
    '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
    '<Relationship Id="rId1" Target="word/document.xml" Type="http://schemas.openxmlformats.org'
    '/officeDocument/2006/relationships/officeDocument"/></Relationships>'
)


def _docx(status: int, message: str) -> bytes:
    """The three parts Word needs, in a ZIP made in memory (all dated 1980: the same bytes)."""
    runs = [f"<w:r><w:rPr><w:b/></w:rPr><w:t>{_title(status)}</w:t></w:r>"]
    runs += [f"<w:r><w:t>{xml_escape(text)}</w:t></w:r>" for text in (message, _ADVICE)]
    document = (
        '<?xml version="1.0" encoding="UTF-8" standalone="yes"?>\n<w:document xmlns:w='
        '"http://schemas.openxmlformats.org/wordprocessingml/2006/main"><w:body>'
        + "".join(f"<w:p>{run}</w:p>" for run in runs)
        + "</w:body></w:document>"
    )
    parts = {
        "[Content_Types].xml": _DOCX_TYPES,
        "_rels/.rels": _DOCX_RELS,
        "word/document.xml": document,
    }
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as docx:
        for name, text in parts.items():
            docx.writestr(zipfile.ZipInfo(name), text)
    return buffer.getvalue()


def _swf(status: int, message: str) -> bytes:
    """A one-frame, 240x40 grey Flash movie; its XMP metadata carries the message."""
    xmp = (
        '<x:xmpmeta xmlns:x="adobe:ns:meta/"><rdf:RDF xmlns:rdf='
        '"http://www.w3.org/1999/02/22-rdf-syntax-ns#"><rdf:Description rdf:about=""'
        ' xmlns:dc="http://purl.org/dc/elements/1.1/"><dc:description><rdf:Alt>'
        f'<rdf:li xml:lang="x-default">{xml_escape(message)}</rdf:li></rdf:Alt>'
        "</dc:description></rdf:Description></rdf:RDF></x:xmpmeta>"
    )
    tags = (
        _swf_tag(69, bytes((0x10, 0, 0, 0)))  # FileAttributes: has metadata, ActionScript 1-2
        + _swf_tag(77, xmp.encode() + b"\0")  # Metadata
        + _swf_tag(9, bytes((0xEE, 0xEE, 0xEE)))  # SetBackgroundColor
        + _swf_tag(1)  # ShowFrame
        + _swf_tag(0)  # End
    )
    # Frame size in twips (1/20 pixel), 12 frames a second (8.8 fixed point), one frame.
    movie = _swf_rect(240 * 20, 40 * 20) + struct.pack("<HH", 12 << 8, 1) + tags
    return b"FWS" + struct.pack("<BI", 10, 8 + len(movie)) + movie


def _swf_tag(code: int, data: bytes = b"") -> bytes:
    """A tag: its code and length in 16 bits, with 32 more for a length of 63 or more."""
    if len(data) < 0x3F:
        return struct.pack("<H", code << 6 | len(data)) + data
    return struct.pack("<HI", code << 6 | 0x3F, len(data)) + data


def _swf_rect(width: int, height: int) -> bytes:
    """A RECT from (0, 0): the field size in 5 bits, then Xmin, Xmax, Ymin, Ymax signed."""
    size = max(width, height).bit_length() + 1
    bits = f"{size:05b}" + "".join(f"{value:0{size}b}" for value in (0, width, 0, height))
    bits += "0" * (-len(bits) % 8)
    return int(bits, 2).to_bytes(len(bits) // 8, "big")


_MAKERS: dict[str, tuple[Callable[[int, str], bytes], str]] = {
    "html": (_html, "text/html; charset=utf-8"),
    "image": (_image, "image/svg+xml"),
    "script": (_comment, "application/javascript"),
    "style": (_comment, "text/css"),
    "json": (_json, "application/json"),
    "text": (_text, "text/plain; charset=utf-8"),
    "pdf": (_pdf, "application/pdf"),
    "docx": (_docx, DOCX),
    "rtf": (_rtf, "application/rtf"),
    "flash": (_swf, "application/x-shockwave-flash"),
}
