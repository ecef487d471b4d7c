"""Nonces and HMAC-SHA256 proofs of the cluster secret used by the handshake."""

import hashlib
import hmac
import secrets

NONCE_BYTES = 32
NONCE_HEX_LEN = 2 * NONCE_BYTES
PROOF_HEX_LEN = 2 * hashlib.sha256().digest_size

SLAVE_LABEL = "hip1 slave"
MASTER_LABEL = "hip1 master"
REDIRECT_LABEL = "hip1 redirect"


def new_nonce() -> str:
    """A fresh random nonce, as lowercase hex, so that no handshake can be replayed."""
    return secrets.token_hex(NONCE_BYTES)


def proof(secret: bytes, label: str, *fields: str) -> str:
    """HMAC-SHA256 of the label and fields, each followed by a NUL byte, as lowercase hex."""
    message = b"".join(field.encode("utf-8") + b"\0" for field in (label, *fields))
    return hmac.new(secret, message, hashlib.sha256).hexdigest()


def check_proof(secret: bytes, given: str, label: str, *fields: str) -> bool:
    """Whether the given proof is the one for these fields, compared in constant time."""
    return hmac.compare_digest(
        given.encode("ascii", "replace"), proof(secret, label, *fields).encode()
    )
