"""Exceptions shared by every dlweb component.

Every error that reaches a user carries a message naming what was wrong and where, so that the
command line and the HTTP servers can print it instead of a traceback.
"""


class DlwebError(Exception):
    """Base of every error dlweb reports to a user."""


class BadName(DlwebError):
    """A file name that is not exactly 64 lowercase hex digits."""


class HashMismatch(DlwebError):
    """Bytes whose SHA-256 differs from the name they were sent under."""


class CorruptFile(DlwebError):
    """A stored file whose bytes do not follow its format."""


class ConfigError(DlwebError):
    """A configuration file or option that is missing, malformed or out of range."""


class NotFound(DlwebError):
    """A file or record the caller asked for does not exist."""
