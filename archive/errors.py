"""Exceptions shared by every dlweb component.

Every error that reaches a user carries a message naming what was wrong and where, so that the
command line and the HTTP servers can print it instead of a traceback. An error a server may
answer a request with derives from `ClientFault` (4xx) or `ServerFault` (5xx), whose `status`
the servers answer with (archive/serving.py `status_of`); any other error is a 500.

The tree, with the module of each error (tests/archive/test_error_tree.py keeps it complete):

    DlwebError
    +-- ClientFault (4xx): a request its sender must change
    |   +-- BadName, HashMismatch, NotFound                archive/errors.py
    |   |   +-- PageNotIndexed (of NotFound)               search/errors.py
    |   |   +-- NoCollection (of NotFound)                 archive/archival_urls.py
    |   +-- BadArchivalUrl                                 archive/archival_urls.py
    |   +-- BadMessage                                     archive/insert_calls.py
    |   +-- BadPack                                        archive/pack.py
    |   +-- BadRecord                                      archive/structure.py
    |   +-- BadTime                                        archive/timestamps.py
    |   +-- BadUrl                                         archive/urlkey.py
    |   +-- RangeNotSatisfiable                            archive/ranges.py
    |   +-- DamagedCopy, UrlMismatch                       storage_node/structures.py
    |   +-- Late                                           storage_node/http.py
    |   +-- ScrubRunning                                   storage_node/scrub.py
    |   +-- BadSpan                                        proxy/coherence.py
    |   +-- BadChoice                                      harbors/calendar.py
    |   +-- BadParameter, and TooLarge of it               harbors/request.py
    |   +-- NotADocument                                   harbors/document.py
    |   +-- BadCdxQuery, BadLinkQuery, BadQuery            search/errors.py
    |   +-- BadOrder (a ValueError too), BadExpression     crawler/delimitation.py
    |   +-- BadSteering                                    crawler/scheduler/steering.py
    +-- ServerFault (5xx): a request that failed on the serving side
    |   +-- ConfigError, CorruptFile, InsufficientStorage  archive/errors.py
    |   |   +-- BadLog (of CorruptFile)                    archive/streams/log.py
    |   +-- ArchiveFault, and PendingRevisit of it         archive/reading.py
    |   +-- DatabaseError, and DatabaseUnavailable of it   archive/pg.py
    |   +-- NoUrlIndex                                     archive/url_index.py
    |   +-- OverBudget                                     search/errors.py
    +-- ClusterError, and NoIndexNode of it                archive/cluster/
    +-- HipError, RemoteError                              archive/hip/
    |   +-- BadFrame (of HipError)                         archive/hip/_frames.py
    |   +-- HandshakeFailed, and AuthRefused of it         archive/hip/_handshake.py
    +-- DiscoveryError                                     archive/discovery.py
    +-- BadCoding                                          archive/content_coding.py
    +-- DamagedMember                                      archive/warc/gunzip.py
    +-- TooLong                                            archive/warc/bounded.py
    +-- BadDescription                                     exchange/pending.py
    +-- BadPackage                                         exchange/zip_layout.py
    +-- AdminError                                         master/admin_cli.py
    +-- AppendFailed                                       master/index/appends.py
    +-- MigrationError                                     master/migration.py
    +-- NoIndex, NotIndexed                                search/errors.py
    +-- StoreError, and DuplicateSite of it                crawler/scheduler/
    +-- SchedulerFailure, and NoScheduler of it          harbors/scheduler_api.py
    +-- BadAssignment                                      crawler/stream/assignment.py
    +-- BadMetadata                                        crawler/stream/icy.py
    +-- BrowserError                                       crawler/browser/_cdp.py
    +-- FetchError                                         crawler/fetch.py
    +-- BadRules                                           crawler/apps/rules.py
    +-- InjectionRefused                                   crawler/social/inject.py
    +-- DemoError                                          deploy/demo.py
    +-- LaunchError                                        deploy/launcher.py
    +-- LanError, and LanUnavailable of it                 deploy/testbed.py
"""

from os import PathLike

CLIPPED = 200  # characters of an outsider's text a message or a log line shows at most


def clipped(text: str, limit: int = CLIPPED) -> str:
    """An outsider's text (a URL, a header, a query) as a message shows it: its start, controls
    escaped, and how long it was when cut, so that a hostile input can make neither a log line
    of any size nor a line of its own."""
    shown = text[:limit]
    if not shown.isprintable():
        shown = shown.encode("unicode_escape").decode("ascii")
    return shown if len(text) <= limit else f"{shown}... ({len(text)} characters)"


class DlwebError(Exception):
    """Base of every error dlweb reports to a user. `where` names the local file at fault: it
    leads the message (str) that a user of this machine reads and a server logs, but not the
    `reason` a server answers its clients with, who have no business knowing its paths."""

    def __init__(self, reason: str = "", where: str | PathLike[str] | None = None) -> None:
        super().__init__(reason if where is None else f"{where}: {reason}")
        self.reason = reason


class ClientFault(DlwebError):
    """A request its sender must change before it can succeed: answered with `status` (4xx)."""

    status = 400


class ServerFault(DlwebError):
    """A request that failed on the serving side, whoever sent it: answered with `status` (5xx)
    and logged."""

    status = 500


class BadName(ClientFault):
    """A file name that is not exactly 64 lowercase hex digits."""


class HashMismatch(ClientFault):
    """Bytes whose SHA-256 differs from the name they were sent under."""

    # Not 422: the name is the body's checksum, so a mismatch is a body damaged on its way or at
    # its sender, a malformed request (as with a wrong Content-MD5), not a well-formed one refused.
    status = 400


class CorruptFile(ServerFault):
    """A stored file whose bytes do not follow its format."""


class ConfigError(ServerFault):
    """A configuration file or option that is missing, malformed or out of range."""


class NotFound(ClientFault):
    """A file or record the caller asked for does not exist."""

    status = 404


class InsufficientStorage(ServerFault):
    """A write refused because the disk that would hold it is full."""

    status = 507
