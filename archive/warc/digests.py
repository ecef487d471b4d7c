"""WARC digest fields (`WARC-Block-Digest`, `WARC-Payload-Digest`): reading and checking them.

The standard names an algorithm and lets writers pick an RFC 4648 encoding, so `sha1:` values come
in base32 (Heritrix, wget, warcio), `sha256:` ones in base32 or hex. A digest is kept as the
algorithm and the raw bytes, so two spellings of the same digest compare equal.
"""

import base64
import binascii
import hashlib
import re
from dataclasses import dataclass

_ALIASES = {"sha-1": "sha1", "sha-256": "sha256", "sha-512": "sha512", "sha-384": "sha384"}
# The digest size of each algorithm read, in bytes.
_SIZES = {
    name: hashlib.new(name).digest_size
    for name in ("md5", "sha1", "sha224", "sha256", "sha384", "sha512")
}
# Unpadded base32 of whole 5-byte groups, the common spelling, read as a base-32 number (the
# standard library's b32decode is pure Python, and an import reads two digests a record).
_WHOLE_BASE32 = re.compile(r"(?:[A-Z2-7]{8})+")
_BASE32_AS_DIGITS = str.maketrans(
    "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", "0123456789abcdefghijklmnopqrstuv"
)
# The spelling nearly every writer uses (Heritrix, wget, warcio), read first: two per record.
_COMMON_SHA1 = re.compile(r"sha1:([A-Z2-7]{32})")


@dataclass(frozen=True, slots=True)
class Digest:
    algorithm: str
    value: bytes

    def __str__(self) -> str:
        return f"{self.algorithm}:{base64.b32encode(self.value).decode('ascii')}"

    def hasher(self) -> "hashlib._Hash":
        return hashlib.new(self.algorithm)

    def key(self) -> int:
        """63 bits of the value: kept in an imported capture's metadata field, so that a revisit
        read later finds its original even when the digest cannot be computed again (a digest
        of the chunked bytes, which the archive no longer has)."""
        return int.from_bytes(self.value[:8], "big") >> 1


def parse_digest(text: str | None) -> Digest | None:
    """The digest a field declares, or None when it is absent or uses an unknown algorithm.

    A value that cannot be decoded raises ValueError naming it.
    """
    if not text:
        return None
    common = _COMMON_SHA1.fullmatch(text)
    if common is not None:
        return Digest("sha1", _whole_base32(common[1]))
    name, sep, value = text.strip().partition(":")
    algorithm = _ALIASES.get(name.lower(), name.lower())
    size = _SIZES.get(algorithm)
    if not sep or size is None:
        return None
    for decode in (_base32, _base16, _base64):
        raw = decode(value)
        if raw is not None and len(raw) == size:
            return Digest(algorithm, raw)
    raise ValueError(f"digest {text[:100]!r} is not a {algorithm} value in base32, hex or base64")


def _base32(value: str) -> bytes | None:
    upper = value.upper()
    if _WHOLE_BASE32.fullmatch(upper):
        return _whole_base32(upper)
    try:
        return base64.b32decode(upper + "=" * (-len(value) % 8))
    except (binascii.Error, ValueError):
        return None


def _whole_base32(upper: str) -> bytes:
    """Uppercase base32 of whole 5-byte groups, decoded."""
    return int(upper.translate(_BASE32_AS_DIGITS), 32).to_bytes(len(upper) * 5 // 8, "big")


def _base16(value: str) -> bytes | None:
    try:
        return bytes.fromhex(value)
    except ValueError:
        return None


def _base64(value: str) -> bytes | None:
    try:
        return base64.b64decode(
            value + "=" * (-len(value) % 4),
            altchars=b"-_" if "-" in value or "_" in value else None,
            validate=True,
        )
    except (binascii.Error, ValueError):
        return None


def sha256_digest(name: str) -> Digest:
    """The WARC digest of a content we store, from its name."""
    return Digest("sha256", bytes.fromhex(name))
