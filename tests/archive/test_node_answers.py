"""A storage node's answers read back: the fields spread in the answer's object, and a bad answer
named by its field."""

import pytest

from archive.hip import RemoteError
from archive.insert_calls import UploadReceipt
from archive.node_answers import (
    Closest,
    ContentStored,
    NamesFilter,
    RecordRange,
    StorageStatus,
    StructureAppended,
)

NODE = "http://127.0.0.1:1"


def test_an_upload_answer_has_its_receipt_beside_its_name() -> None:
    stored = ContentStored("ab", UploadReceipt(1, (NODE,), {"http://b:2": "refused"}))
    data = stored.to_json()
    assert list(data) == ["name", "created", "forwarded", "failed"]
    assert ContentStored.from_json(data, "PUT") == stored


def test_what_the_server_adds_to_the_status_follows_its_fields() -> None:
    extra = {"address": NODE, "master": None}
    status = StorageStatus("n1", 1.5, {"free": 1}, {}, {}, (3,), 7, NamesFilter(1, 2, 0), extra)
    data = status.to_json()
    assert list(data)[-3:] == ["filter", "address", "master"]
    assert StorageStatus.from_json(data, "/status") == status


def test_a_lookup_answer_without_count_is_read() -> None:
    found = Closest.from_json({"name": "ab", "url": "http://a/", "records": [{}]}, "closest")
    assert (found.count, found.first) == (None, None)
    with pytest.raises(RemoteError, match="range: the answer has no 'records'"):
        RecordRange.from_json({"name": "ab", "url": "http://a/", "count": 1}, "range")


@pytest.mark.parametrize(
    ("kind", "data", "message"),
    [
        (StructureAppended, {"name": "ab", "added": "1", "created": True}, "added must be int"),
        (StructureAppended, {"name": "ab", "added": 1}, "has no 'created'"),
        (ContentStored, {"name": "ab", "created": "1"}, "'created' must be an integer"),
        (ContentStored, [], "the answer must be an object"),
        (ContentStored, {"created": 1}, "has no 'name'"),
    ],
)
def test_a_bad_answer_is_named_by_its_field(kind: type, data: object, message: str) -> None:
    with pytest.raises(RemoteError, match=message) as caught:
        kind.from_json(data, "where")
    assert caught.value.message.startswith("where: ")
