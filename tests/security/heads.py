"""Request heads made up by hypothesis, near enough to HTTP to reach a parser's corners and the
handlers behind it: the fuzz tests of the cluster's servers and of the proxy send them."""

from hypothesis import strategies as st

from archive.insert_calls import FORWARD_HEADER

NAME = b"0" * 64

METHODS = st.sampled_from(
    [b"GET", b"HEAD", b"POST", b"PUT", b"DELETE", b"OPTIONS", b"PATCH", b"CONNECT", b"G\x00T", b""]
)
CLUSTER_TARGETS = st.one_of(
    st.sampled_from(
        [
            b"/status",
            b"/content/" + NAME,
            b"/content/" + NAME + b"/check",
            b"/structure/" + NAME + b"?mode=range&from=2000&to=1990&limit=-1",
            b"/structure/" + NAME + b"?mode=days&from=x",
            b"/inventory?since=99999999999999999999&limit=0",
            b"/admin/fsck?deep=1",
            b"/admin/scrub",
            b"/admin/nodes/%00/state",
            b"/locate/content/" + NAME,
            b"/structures?after=..&limit=1e9",
            b"/hip",
            b"*",
            b"http://other.example/status",
            b"//status/../../etc/passwd",
        ]
    ),
    st.binary(max_size=120).map(lambda raw: b"/" + raw),
)
VERSIONS = st.sampled_from([b"HTTP/1.1", b"HTTP/1.0", b"HTTP/2.0", b"HTTP/1.1x", b"http/1.1", b""])
FIELD_NAMES = st.one_of(
    st.sampled_from(
        [
            b"Host",
            b"Content-Length",
            b"Transfer-Encoding",
            b"Authorization",
            b"Connection",
            b"Upgrade",
            b"Expect",
            b"Range",
            b"If-None-Match",
            b"Accept",
            b"Content-Type",
            b"Content-Encoding",
            FORWARD_HEADER.encode(),
        ]
    ),
    st.binary(min_size=1, max_size=30),
)
FIELD_VALUES = st.one_of(
    st.sampled_from(
        [
            b"0",
            b"-1",
            b"99999999999999999999999",
            b"chunked",
            b"gzip, chunked",
            b"close",
            b"Upgrade",
            b"websocket",
            b"100-continue",
            b"Bearer \xff\xfe",
            b"Bearer ",
            b"bytes=0-0,-1,5-3",
            b"text/html",
            b"http://127.0.0.1:1,,http://",
        ]
    ),
    st.binary(max_size=60),
)
ENDS = st.sampled_from([b"\r\n", b"\n", b"\r"])


@st.composite
def request_heads(draw: st.DrawFn, targets: st.SearchStrategy[bytes]) -> bytes:
    """A request head, near enough to HTTP to reach the parser's corners and the handlers, and
    some bytes after it (a body, or the next request's start)."""
    end = draw(ENDS)
    line = draw(METHODS) + b" " + draw(targets) + b" " + draw(VERSIONS) + end
    fields = draw(st.lists(st.tuples(FIELD_NAMES, FIELD_VALUES), max_size=8))
    head = line + b"".join(name + b": " + value + end for name, value in fields) + end
    return head + draw(st.binary(max_size=40))


def heads(targets: st.SearchStrategy[bytes]) -> st.SearchStrategy[bytes]:
    """Request heads for `targets`, or bytes of no shape ending as a head ends."""
    return st.one_of(
        request_heads(targets), st.binary(max_size=300).map(lambda raw: raw + b"\r\n\r\n")
    )
