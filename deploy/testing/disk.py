"""What a storage node holds on its disk, read from outside the node (to check or damage it)."""

from pathlib import Path

from storage_node import Span, spans_in_store


def stored_spans(node_root: Path, kind: str = "content") -> dict[str, Span]:
    """Every file of a kind ("content" or "structure") on a node's disk, by name."""
    return {span.name: span for span in spans_in_store(Path(node_root) / kind)}


def content_spans(node_root: Path) -> dict[str, Span]:
    return stored_spans(node_root, "content")


def stored_bytes(node_root: Path, name: str, kind: str = "content") -> bytes | None:
    """The bytes a node's disk holds under a name, or None."""
    span = stored_spans(node_root, kind).get(name)
    return None if span is None else span.read()


def stored_content(node_root: Path, name: str) -> bytes | None:
    return stored_bytes(node_root, name, "content")


def overwrite(node_root: Path, name: str, data: bytes, kind: str = "content") -> None:
    """Replace a file's bytes in place on a node's disk by as many other bytes."""
    span = stored_spans(node_root, kind).get(name)
    assert span is not None, f"{kind} {name} is not on the disk of {node_root}"
    assert len(data) == span.size, "an overwrite keeps the file's length"
    with open(span.path, "r+b") as stream:
        stream.seek(span.offset)
        stream.write(data)


def overwrite_content(node_root: Path, name: str, data: bytes) -> None:
    overwrite(node_root, name, data, "content")


def damage(node_root: Path, name: str, at: int = 0, kind: str = "content") -> bytes:
    """Flip one byte of a file in place on a node's disk (`at` < 0 counts from its end);
    return the damaged bytes."""
    damaged = bytearray(stored_bytes(node_root, name, kind) or b"")
    assert damaged, f"{kind} {name} is not on the disk of {node_root}"
    damaged[at] ^= 0xFF
    overwrite(node_root, name, bytes(damaged), kind)
    return bytes(damaged)


def damage_content(node_root: Path, name: str, at: int = 0) -> bytes:
    return damage(node_root, name, at, "content")
