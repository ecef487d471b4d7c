"""What a storage node holds on its disk, read from outside the node (to check or damage it)."""

from pathlib import Path

from storage_node import Span, contents_on_disk


def content_spans(node_root: Path) -> dict[str, Span]:
    """Every content on a node's disk, by name."""
    return {span.name: span for span in contents_on_disk(Path(node_root) / "content")}


def stored_content(node_root: Path, name: str) -> bytes | None:
    """The bytes a node's disk holds under a content name, or None."""
    span = content_spans(node_root).get(name)
    return None if span is None else span.read()


def overwrite_content(node_root: Path, name: str, data: bytes) -> None:
    """Replace a content's bytes in place on a node's disk by as many other bytes."""
    span = content_spans(node_root).get(name)
    assert span is not None, f"content {name} is not on the disk of {node_root}"
    assert len(data) == span.size, "an overwrite keeps the content's length"
    with open(span.path, "r+b") as stream:
        stream.seek(span.offset)
        stream.write(data)


def damage_content(node_root: Path, name: str, at: int = 0) -> bytes:
    """Flip one byte of a content in place on a node's disk; return the damaged bytes."""
    damaged = bytearray(stored_content(node_root, name) or b"")
    assert damaged, f"content {name} is not on the disk of {node_root}"
    damaged[at] ^= 0xFF
    overwrite_content(node_root, name, bytes(damaged))
    return bytes(damaged)
