"""The lookup URL of a request other than GET, with its method and body folded in as pywb does.

The expected keys of pywb's own cases are those its MethodQueryCanonicalizer makes (in
pywb/warcserver/inputrequest.py), with the method in lower case, as its CDX keys have it.
"""

import random

import pytest

from archive.requestkey import MAX_FOLDED, lookup_url, original_url

FORM = "application/x-www-form-urlencoded"
JSON = "application/json"
PYWB_FORM_BODY = b"foo=bar&dir=%2Fbaz&do=true&re=false&re=null"
PYWB_FORM_BASE64 = "Zm9vPWJhciZkaXI9JTJGYmF6JmRvPXRydWUmcmU9ZmFsc2UmcmU9bnVsbA=="


@pytest.mark.parametrize("method", ["GET", "get", "HEAD", "Head"])
def test_get_and_head_keep_their_url(method: str):
    body = b'{"q": "cats"}'
    assert lookup_url(method, "http://example.com/a?b=c", JSON, body) == "http://example.com/a?b=c"


def test_a_form_is_folded_percent_decoded():
    assert (
        lookup_url("POST", "http://example.com/", FORM, PYWB_FORM_BODY)
        == "http://example.com/?__wb_method=post&foo=bar&dir=/baz&do=true&re=false&re=null"
    )


def test_the_folded_part_follows_an_existing_query_with_an_ampersand():
    assert (
        lookup_url("POST", "http://example.com/?123=ABC", FORM, PYWB_FORM_BODY)
        == "http://example.com/?123=ABC&__wb_method=post&foo=bar&dir=/baz&do=true&re=false&re=null"
    )


def test_a_put_form_is_folded_like_a_post():
    assert (
        lookup_url("PUT", "http://example.com/", FORM, PYWB_FORM_BODY)
        == "http://example.com/?__wb_method=put&foo=bar&dir=/baz&do=true&re=false&re=null"
    )


def test_json_becomes_the_pairs_of_its_scalars_with_repeated_names_made_distinct():
    body = b'{"a": "b", "c": {"a": 2}, "d": "e", "f": true, "g": [false, null]}'
    assert (
        lookup_url("POST", "http://example.com/", JSON, body)
        == "http://example.com/?__wb_method=post&a=b&a.2_=2&d=e&f=true&g=false&g.2_=null"
    )


def test_json_values_are_url_encoded_and_whole_floats_written_as_integers():
    body = (
        b'{"type": "event", "id": 44.0, "float": 35.7, "values": [true, false, null],'
        b' "source": {"type": "component", "id": "a+b&c= d", "values": [3, 4]}}'
    )
    assert lookup_url(
        "POST", "http://example.com/events", "application/json; charset=utf-8", body
    ) == (
        "http://example.com/events?__wb_method=post&type=event&id=44&float=35.7"
        "&values=true&values.2_=false&values.3_=null&type.2_=component&id.2_=a%2Bb%26c%3D+d"
        "&values.4_=3&values.5_=4"
    )


def test_text_plain_that_parses_as_json_is_folded_as_json():
    body = b'{"query": "cats", "page": 2}'
    assert (
        lookup_url("POST", "http://example.com/api", "text/plain;charset=UTF-8", body)
        == "http://example.com/api?__wb_method=post&query=cats&page=2"
    )


def test_text_plain_that_is_not_json_is_kept_as_base64():
    assert (
        lookup_url("POST", "http://example.com/pathbar?id=123", "text/plain", PYWB_FORM_BODY)
        == f"http://example.com/pathbar?id=123&__wb_method=post&__wb_post_data={PYWB_FORM_BASE64}"
    )


def test_multipart_form_data_becomes_its_fields_url_encoded():
    boundary = "----WebKitFormBoundary7MA4YWxkTrZu0gW"
    body = (
        (
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="foo"\r\n\r\nbar\r\n'
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="q"\r\n\r\n'
            '[{"websessionid":"pb2tr7:vx83uz:fdi8ta","user":"0"}]\r\n'
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="empty"\r\n\r\n\r\n'
            f"--{boundary}\r\n"
            'Content-Disposition: form-data; name="file"; filename="a.bin"\r\n'
            "Content-Type: application/octet-stream\r\n\r\n"
        ).encode()
        + b"\xff\x00ab\r\n"
        + f"--{boundary}--\r\n".encode()
    )
    content_type = f"multipart/form-data; boundary={boundary}"
    assert lookup_url("POST", "https://example.com/ajax/bz?foo=bar", content_type, body) == (
        "https://example.com/ajax/bz?foo=bar&__wb_method=post&foo=bar"
        "&q=%5B%7B%22websessionid%22%3A%22pb2tr7%3Avx83uz%3Afdi8ta%22%2C%22user%22%3A%220%22%7D%5D"
        "&empty=&file=%FF%00ab"
    )


def test_any_other_body_is_kept_as_base64():
    assert (
        lookup_url("POST", "http://example.com/", "application/octet-stream", PYWB_FORM_BODY)
        == f"http://example.com/?__wb_method=post&__wb_post_data={PYWB_FORM_BASE64}"
    )
    assert lookup_url("POST", "http://example.com/", None, b"\x00\x01") == (
        "http://example.com/?__wb_method=post&__wb_post_data=AAE="
    )


def test_a_form_that_is_not_utf8_falls_back_to_base64():
    body = b"\x816l`L\xa04P\x0e\xe0r\x02\xb5\x89\x19\x00fP\xdb\x0e\xb0\x02,"
    assert (
        lookup_url("POST", "http://example.com/", FORM, body)
        == "http://example.com/?__wb_method=post&__wb_post_data=gTZsYEygNFAO4HICtYkZAGZQ2w6wAiw="
    )


def test_multipart_without_a_boundary_falls_back_to_base64():
    assert (
        lookup_url("POST", "http://example.com/", "multipart/form-data", PYWB_FORM_BODY)
        == f"http://example.com/?__wb_method=post&__wb_post_data={PYWB_FORM_BASE64}"
    )


@pytest.mark.parametrize("body", [b'{"a": ', b'{"a": Infinity}', b"\xff\xfe{}", b"[" * 100_000])
def test_json_that_does_not_decode_falls_back_to_base64(body: bytes):
    key = lookup_url("POST", "http://example.com/", JSON, body)
    assert key.startswith("http://example.com/?__wb_method=post&__wb_post_data=")


def test_an_empty_body_folds_the_method_alone():
    assert lookup_url("POST", "http://example.com/", FORM, b"") == (
        "http://example.com/?__wb_method=post"
    )
    assert lookup_url("OPTIONS", "http://example.com/", None, b"") == (
        "http://example.com/?__wb_method=options"
    )


@pytest.mark.parametrize("method", ["PATCH", "DELETE", "PROPFIND"])
def test_every_method_but_get_and_head_folds_its_body(method: str):
    key = lookup_url(method, "http://example.com/item/7", JSON, b'{"name": "new"}')
    assert key == f"http://example.com/item/7?__wb_method={method.lower()}&name=new"


def test_the_folded_body_is_cut_at_4096_characters():
    body = b"text=" + b"x" * 10_000
    key = lookup_url("POST", "http://example.com/", FORM, body)
    prefix = "http://example.com/?__wb_method=post&"
    assert key == prefix + ("text=" + "x" * 10_000)[:MAX_FOLDED]
    assert MAX_FOLDED == 4096
    binary = lookup_url("POST", "http://example.com/", "image/png", bytes(10_000))
    assert len(binary) == len(prefix) + 4096


def test_a_different_body_gives_a_different_key_and_the_same_body_the_same_key():
    cats = lookup_url("POST", "http://example.com/api", JSON, b'{"q": "cats"}')
    dogs = lookup_url("POST", "http://example.com/api", JSON, b'{"q": "dogs"}')
    assert cats != dogs
    assert cats == lookup_url("POST", "http://example.com/api", JSON, b'{"q": "cats"}')
    assert cats != lookup_url("PUT", "http://example.com/api", JSON, b'{"q": "cats"}')


@pytest.mark.parametrize(
    "url", ["http://example.com/", "http://example.com/a/b?c=d&e=f", "https://example.com/x?"]
)
def test_original_url_undoes_the_folding(url: str):
    key = lookup_url("PUT", url, FORM, b"x=1&__wb_method=get")
    assert original_url(key) == url
    assert original_url(url) == url


def test_any_bytes_fold_without_an_error_and_round_trip():
    rng = random.Random(20240301)
    content_types = [FORM, JSON, "text/plain", "multipart/form-data; boundary=b", None, "x/y"]
    for _ in range(200):
        body = rng.choice([b"", b"--b\r\n", b'{"a": [']) + rng.randbytes(rng.randrange(300))
        for content_type in content_types:
            key = lookup_url("POST", "http://example.com/p?q=1", content_type, body)
            assert original_url(key) == "http://example.com/p?q=1"
