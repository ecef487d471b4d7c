"""PDF: the targets of link annotations (URI actions, and Launch or GoToR actions that name a URL)
and the text of the pages, read with pypdf within bounds of pages, work and time.

The page tree is walked here rather than by pypdf, which would first list every page of the
document: at most MAX_PAGES pages are visited, each node once. The links of all those pages are
read before any text, so a document whose text takes too long still gives its links. What pypdf
says it repaired (a broken or looping cross-reference table...) is reported as a problem.
"""

import io
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from archive.deadline import Deadline

from ..links import LinkKind
from .common import shorten
from .documents import DocumentParser, Unreadable

if TYPE_CHECKING:
    from pypdf import PageObject, PdfReader

CONTENT_TYPES = ("application/pdf", "application/x-pdf")
SUFFIXES = (".pdf",)
MAX_PAGES = 500
MAX_TREE_NODES = 5000  # nodes of the page tree visited, pages and the nodes above them
MAX_ANNOTATIONS = 5000  # of one page
MAX_STREAM = 16 * 1024 * 1024  # bytes a stream may decode to
MAX_OPERATIONS = 300_000  # parsing work of one content stream, in pypdf's count
MAX_REPAIRS = 3  # of pypdf's warnings reported
# What a page inherits from the nodes above it in the page tree.
_INHERITED = ("/Resources", "/MediaBox", "/CropBox", "/Rotate")
_FILE_ACTIONS = frozenset({"/Launch", "/GoToR"})
_MAGIC = b"%PDF-"
# pypdf's logger is set to collect one document's warnings at a time.
_PYPDF_LOGGER = logging.getLogger("pypdf")
_reading = threading.Lock()


def sniff(head: bytes) -> bool:
    return head.lstrip()[: len(_MAGIC)] == _MAGIC


class _TimedStream(io.BytesIO):
    """The document as pypdf reads it: every read checks the deadline."""

    def __init__(self, data: bytes, deadline: Deadline) -> None:
        super().__init__(data)
        self._deadline = deadline

    def read(self, size: int | None = -1) -> bytes:
        self._deadline.check()
        return super().read(size)


class _Repairs(logging.Handler):
    """What pypdf says it worked around in one document, the first few."""

    def __init__(self) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        if len(self.messages) < MAX_REPAIRS:
            self.messages.append(record.getMessage())


@contextmanager
def _repairs() -> Iterator[list[str]]:
    """pypdf's warnings while reading one document, kept out of the log."""
    with _reading:
        handler = _Repairs()
        level, propagate = _PYPDF_LOGGER.level, _PYPDF_LOGGER.propagate
        _PYPDF_LOGGER.addHandler(handler)
        _PYPDF_LOGGER.setLevel(logging.WARNING)
        _PYPDF_LOGGER.propagate = False
        try:
            yield handler.messages
        finally:
            _PYPDF_LOGGER.removeHandler(handler)
            _PYPDF_LOGGER.setLevel(level)
            _PYPDF_LOGGER.propagate = propagate


def _text_of(value: Any) -> str | None:
    """A PDF string as text; None for anything else."""
    if isinstance(value, bytes):
        return value.decode("latin-1")
    return value if isinstance(value, str) else None


def _resolved(value: Any) -> Any:
    return value.get_object() if hasattr(value, "get_object") else value


def _file_url(spec: Any) -> str | None:
    """The URL a file specification names, only when it is plainly one."""
    spec = _resolved(spec)
    if isinstance(spec, dict):
        spec = _resolved(spec.get("/UF") or spec.get("/F"))
    name = _text_of(spec)
    return name if name is not None and name.lower().startswith(("http://", "https://")) else None


def action_target(action: Any) -> str | None:
    """The URL an action opens: a URI action's, or a Launch or GoToR action's URL file spec."""
    action = _resolved(action)
    if not isinstance(action, dict):
        return None
    kind = action.get("/S")
    if kind == "/URI":
        return _text_of(_resolved(action.get("/URI")))
    if kind in _FILE_ACTIONS:
        spec = action.get("/F")
        windows = _resolved(action.get("/Win"))
        if spec is None and isinstance(windows, dict):
            spec = windows.get("/F")
        return _file_url(spec)
    return None


class PdfParser(DocumentParser):
    kind = "pdf"

    def _read(self, data: bytes, deadline: Deadline) -> None:
        with _repairs() as repairs:
            try:
                self._read_pdf(data, deadline)
            finally:
                for message in repairs:
                    self.problem(f"repaired: {shorten(message)}")

    def _read_pdf(self, data: bytes, deadline: Deadline) -> None:
        import pypdf  # here: it is slow to load, and only a PDF needs it

        with pypdf.apply_configuration(
            zlib_maximum_output_length=MAX_STREAM,
            lzw_maximum_output_length=MAX_STREAM,
            run_length_maximum_output_length=MAX_STREAM,
            stream_parsing_work_maximum_count=MAX_OPERATIONS,
            jbig2dec_binary=None,
        ):
            reader = pypdf.PdfReader(_TimedStream(data, deadline))
            self._decrypt(reader)
            pages = list(self._pages(reader, deadline))
            for page in pages:
                self._links(page)
            for number, page in enumerate(pages, 1):
                if self._text.cut:
                    break
                self._page_text(number, page, deadline)

    def _page_text(self, number: int, page: "PageObject", deadline: Deadline) -> None:
        """Adds a page's text; a page pypdf cannot read is noted, and the next one read."""
        try:
            self._text.add(page.extract_text(visitor_operand_before=deadline.check) + "\n")
        except Unreadable:
            raise
        except Exception as exc:  # pypdf's error on a damaged page may be of any type
            self.problem(f"page {number} unreadable ({type(exc).__name__})")

    def _decrypt(self, reader: "PdfReader") -> None:
        """Opens a document encrypted without a user password; refuses one that has one."""
        if reader.is_encrypted and not reader.decrypt(""):
            raise Unreadable("encrypted")

    def _pages(self, reader: "PdfReader", deadline: Deadline) -> Iterator["PageObject"]:
        """The first MAX_PAGES pages, in order, each with what it inherits."""
        from pypdf import PageObject
        from pypdf.generic import IndirectObject, NameObject

        root = _resolved(reader.trailer["/Root"])
        stack: list[tuple[Any, dict[str, Any]]] = [(root["/Pages"], {})]
        seen: set[tuple[int, int]] = set()
        pages = nodes = 0
        while stack:
            deadline.check()
            if pages == MAX_PAGES:
                self.problem(f"pages after the first {MAX_PAGES} not read")
                return
            reference, inherited = stack.pop()
            if isinstance(reference, IndirectObject):
                if (reference.idnum, reference.generation) in seen:
                    continue
                seen.add((reference.idnum, reference.generation))
            nodes += 1
            if nodes > MAX_TREE_NODES:
                raise Unreadable(f"page tree of more than {MAX_TREE_NODES} nodes")
            node = _resolved(reference)
            if not isinstance(node, dict):
                continue
            inherited = inherited | {key: node[key] for key in _INHERITED if key in node}
            kids = _resolved(node.get("/Kids"))
            if isinstance(kids, list):
                stack.extend((kid, inherited) for kid in reversed(kids[:MAX_TREE_NODES]))
                continue
            indirect = reference if isinstance(reference, IndirectObject) else None
            page = PageObject(reader, indirect)
            page.update({NameObject(key): value for key, value in inherited.items()})
            page.update(node)
            pages += 1
            yield page

    def _links(self, page: "PageObject") -> None:
        annotations = _resolved(page.get("/Annots"))
        if not isinstance(annotations, list):
            return
        for listed in annotations[:MAX_ANNOTATIONS]:
            annotation = _resolved(listed)
            if not isinstance(annotation, dict):
                continue
            target = action_target(annotation.get("/A"))
            if target is not None:
                text = _text_of(_resolved(annotation.get("/Contents"))) or ""
                self._sink.add(target, LinkKind.PAGE, False, text)
