"""A URL given from outside is split only once it is bounded, valid text without control
characters, with a readable host and port; otherwise its readers say why, in their own words."""

import pytest

from archive.hip import parse_proxy
from archive.url_parts import split_url
from harbors.request import BadParameter, web_url


def test_a_good_url_is_split_with_its_host_and_port() -> None:
    parts = split_url("http://user@Example.test:8080/a?b#c", 100, "'the URL'")
    assert (parts.scheme, parts.hostname, parts.port, parts.path) == (
        "http",
        "example.test",
        8080,
        "/a",
    )


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://a.test/" + "x" * 100, "'the URL' is longer than 100 characters"),
        ("http://a.test/\udcff", "'the URL' is not valid UTF-8"),
        ("http://a.test/\r\nSet-Cookie: a=1", "'the URL' holds a control character"),
        ("http://a.test/\x85", "'the URL' holds a control character"),
        ("http://a.test:99999/", "'the URL' cannot be read as a URL: Port out of range"),
        ("http://a.test:8o/", "'the URL' cannot be read as a URL: Port could not be cast"),
        ("http://[::1/", "'the URL' cannot be read as a URL: Invalid IPv6 URL"),
    ],
)
def test_a_url_that_cannot_be_read_safely_is_refused_saying_why(url: str, said: str) -> None:
    with pytest.raises(ValueError) as refused:
        split_url(url, 100, "'the URL'")
    assert str(refused.value).startswith(said)


def test_a_harbor_parameter_with_a_bad_port_is_refused_naming_the_parameter() -> None:
    with pytest.raises(BadParameter) as refused:
        web_url("back", "http://held.test:99999/")
    assert str(refused.value).startswith("back='http://held.test:99999/' cannot be read as a URL")


def test_a_proxy_url_with_a_control_character_is_not_a_proxy_url_and_hides_its_password() -> None:
    with pytest.raises(ValueError) as refused:
        parse_proxy("http://agent:secret@pro\nxy:3128")
    said = str(refused.value)
    assert said.startswith("not a proxy URL: 'http://***@pro\\nxy:3128' holds a control")
    assert "secret" not in said
