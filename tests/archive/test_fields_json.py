"""The JSON that `Fields` derives from a dataclass's fields (archive/hip/_messages.py) and that
`Answer` extends to nested answers: each compared with the object spelled out, and its code
written once a class."""

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from archive.answers import Answer
from archive.hip import Fields, Message, RemoteError, bad_params, left_out
from archive.hip import _messages as messages


@dataclass(frozen=True, slots=True)
class Point(Fields):
    x: int
    y: int


@dataclass(frozen=True, slots=True)
class Shape(Fields):
    name: str
    points: tuple[Point, ...]
    tags: tuple[str, ...]
    labels: tuple[str, ...] | None
    note: list[str]
    extra: dict[str, int]


@dataclass(frozen=True, slots=True)
class Job(Fields):
    name: str
    retries: int = left_out(0)
    state: str = "new"
    owners: tuple[str, ...] | None = left_out(None)


class Leaf(Answer):
    id: str
    size: int


class Tree(Answer):
    name: str
    leaf: Leaf | None
    leaves: dict[str, Leaf]
    ranked: tuple[Leaf, ...]
    meta: Any
    plain: dict[str, int]
    hidden: Leaf | None = left_out(None)


class Reading(Message):
    sensor: str
    value: float

    def check(self, method: str) -> None:
        super().check(method)  # a bare super(), in the class the decorator would have made anew
        if self.value < 0:
            raise bad_params(method, "value must not be below 0")


class Gauge(Answer):
    sensor: str
    value: float
    unit: str = left_out("")


# A subclass of a subclass, a class keyword passed on to `dataclass`.
class Calibrated(Gauge, kw_only=True):
    offset: float


def test_a_message_or_answer_declared_without_a_decorator_is_a_frozen_slotted_dataclass() -> None:
    made: tuple[Reading | Gauge, ...] = (
        Reading("t1", 1.5),
        Gauge("t2", 2.5),
        Calibrated("t3", 3.5, "C", offset=0.25),
    )
    own_fields = (("sensor", "value"), ("sensor", "value", "unit"), ("offset",))
    for message, slots in zip(made, own_fields, strict=True):
        assert dataclasses.is_dataclass(type(message))
        assert type(message).__slots__ == slots
        assert not hasattr(message, "__dict__")
        with pytest.raises(dataclasses.FrozenInstanceError):
            message.sensor = "other"  # type: ignore[misc]
        assert type(message).from_json(message.to_json(), "a reading") == message
    with pytest.raises(RemoteError, match="value must not be below 0"):
        Reading.from_json({"sensor": "t4", "value": -1}, "a reading")  # its check, after super()


def test_plain_fields_go_by_name_in_their_order() -> None:
    data = Point(2, 3).to_json()
    assert data == {"x": 2, "y": 3}
    assert list(data) == ["x", "y"]


def test_tuples_go_as_lists_and_a_tuple_of_messages_as_the_list_of_their_json() -> None:
    shape = Shape("tri", (Point(0, 0), Point(1, 2)), ("a", "b"), ("c",), ["d"], {"e": 1})
    assert shape.to_json() == {
        "name": "tri",
        "points": [{"x": 0, "y": 0}, {"x": 1, "y": 2}],
        "tags": ["a", "b"],
        "labels": ["c"],
        "note": ["d"],
        "extra": {"e": 1},
    }
    assert type(shape.to_json()["tags"]) is list


def test_an_optional_tuple_that_is_none_goes_as_null() -> None:
    assert Shape("dot", (), (), None, [], {}).to_json() == {
        "name": "dot",
        "points": [],
        "tags": [],
        "labels": None,
        "note": [],
        "extra": {},
    }


def test_a_left_out_field_is_missing_at_its_default_and_in_its_place_off_it() -> None:
    assert Job("a").to_json() == {"name": "a", "state": "new"}
    assert list(Job("b", 2, "done", ("x",)).to_json().items()) == [
        ("name", "b"),
        ("retries", 2),
        ("state", "done"),
        ("owners", ["x"]),
    ]
    assert Job("c", owners=()).to_json() == {"name": "c", "state": "new", "owners": []}


def test_an_answer_gives_nested_answers_and_dicts_of_them_as_their_json() -> None:
    tree = Tree(
        "oak",
        Leaf("a", 1),
        {"b": Leaf("b", 2)},
        (Leaf("c", 3),),
        {"deep": Leaf("d", 4)},
        {"n": 5},
        hidden=Leaf("e", 5),
    )
    assert tree.to_json() == {
        "name": "oak",
        "leaf": {"id": "a", "size": 1},
        "leaves": {"b": {"id": "b", "size": 2}},
        "ranked": [{"id": "c", "size": 3}],
        "meta": {"deep": {"id": "d", "size": 4}},
        "plain": {"n": 5},
        "hidden": {"id": "e", "size": 5},
    }
    assert Tree("elm", None, {}, (), Leaf("f", 6), {}).to_json() == {
        "name": "elm",
        "leaf": None,
        "leaves": {},
        "ranked": [],
        "meta": {"id": "f", "size": 6},
        "plain": {},
    }


def test_the_code_of_to_json_is_written_once_a_class_and_then_called_directly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    @dataclass(frozen=True, slots=True)
    class Pair(Fields):
        left: int
        right: str

    written: list[type] = []
    derive = messages._derive

    def counted(cls: type, nested: Any) -> Any:
        written.append(cls)
        return derive(cls, nested)

    monkeypatch.setattr(messages, "_derive", counted)
    assert [Pair(i, "r").to_json() for i in range(3)] == [
        {"left": i, "right": "r"} for i in range(3)
    ]
    assert written == [Pair]


def test_a_subclass_made_after_its_base_derived_to_json_derives_its_own() -> None:
    @dataclass(frozen=True, slots=True)
    class Base(Fields):
        a: int

    assert Base(1).to_json() == {"a": 1}

    @dataclass(frozen=True, slots=True)
    class Wider(Base):
        b: tuple[int, ...]

    assert Wider(1, (2,)).to_json() == {"a": 1, "b": [2]}
    assert Base(3).to_json() == {"a": 3}


def test_a_base_with_subclasses_keeps_each_class_to_its_own_fields() -> None:
    @dataclass(frozen=True, slots=True)
    class Base(Fields):
        a: int

    @dataclass(frozen=True, slots=True)
    class Wider(Base):
        b: int

    assert [Base(1).to_json(), Wider(1, 2).to_json(), Base(3).to_json()] == [
        {"a": 1},
        {"a": 1, "b": 2},
        {"a": 3},
    ]


def test_a_method_that_builds_on_the_derived_one_stays_in_place() -> None:
    class Counted(Fields):
        __slots__ = ()

        def to_json(self) -> dict[str, Any]:
            return {**super().to_json(), "counted": True}

    @dataclass(frozen=True, slots=True)
    class Named(Counted):
        name: str

    @dataclass(frozen=True, slots=True)
    class Aged(Named):
        age: int

    for _ in range(2):
        assert Named("x").to_json() == {"name": "x", "counted": True}
        assert Aged("y", 3).to_json() == {"name": "y", "age": 3, "counted": True}
