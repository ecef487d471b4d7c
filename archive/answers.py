"""JSON answers between our processes over HTTP (the master's, an index node's, the scheduler's
API), typed once: the server builds the answer and serves `to_json()`, the reader takes it apart
with `from_json`, and both see the same fields.

An answer is a subclass of `Answer`, which makes it a frozen slotted dataclass by its declaration
alone (no decorator; `MessageType`), whose JSON is its fields in order (`Fields`), a field declared
with `left_out` missing while it has its default, a nested answer (or a map or tuple of them) as
its own JSON. `from_json(data, where)` checks every field by its type hint (str, int, bool,
float for any finite number, `X | None`, a nested answer, `tuple[X, ...]` from a list,
`dict[str, X]`, `Any` as it is), a field with a default being optional, and raises a
`bad_params` RemoteError naming the answer (`where`) and the field at fault.
"""

import dataclasses
import functools
import types
from collections.abc import Callable
from typing import Any, Self, TypeVar, Union, get_args, get_origin, get_type_hints

from .hip import Fields, MessageType, RemoteError, bad_params, is_number

__all__ = ["Answer", "parsed"]

A = TypeVar("A", bound="Answer")


def _json(value: Any) -> Any:
    """A field's JSON where Fields.to_json leaves it as it is: a nested answer, a map of them."""
    if isinstance(value, Fields):
        return value.to_json()
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    return value


Decoder = Callable[[Any, str, str], Any]


@functools.cache
def _decoder(hint: Any) -> Decoder:
    """What checks a value against the type `hint` of its field and gives it as the field holds
    it, made once a hint: `decode(value, path, where)`, `path` the value's place in the answer
    to `where`."""
    origin, args = get_origin(hint), get_args(hint)
    if hint is Any:
        return lambda value, path, where: value
    if origin in (Union, types.UnionType):
        (kind,) = (arg for arg in args if arg is not type(None))
        return _nullable(_decoder(kind)) if type(None) in args else _decoder(kind)
    if origin is tuple:
        return _tuple_of(_decoder(args[0]))
    if origin is dict:
        return _dict_of(None if args[1] is Any else _decoder(args[1]))
    if isinstance(hint, type) and issubclass(hint, Answer):
        return lambda value, path, where: _answer(hint, value, path, where)
    if hint is float:
        return _number
    return _instance_of(hint)


def _nullable(decode: Decoder) -> Decoder:
    return lambda value, path, where: None if value is None else decode(value, path, where)


def _tuple_of(decode: Decoder) -> Decoder:
    def tuple_of(value: Any, path: str, where: str) -> tuple[Any, ...]:
        if not isinstance(value, list):
            raise bad_params(where, f"{path} must be a list")
        return tuple(decode(item, f"{path}[{i}]", where) for i, item in enumerate(value))

    return tuple_of


def _dict_of(decode: Decoder | None) -> Decoder:
    """A JSON object's decoder: its values checked by `decode`, or taken as they are."""

    def dict_of(value: Any, path: str, where: str) -> dict[str, Any]:
        if not isinstance(value, dict):
            raise bad_params(where, f"{path} must be an object")
        if decode is None:
            return value
        return {key: decode(item, f"{path}.{key}", where) for key, item in value.items()}

    return dict_of


def _number(value: Any, path: str, where: str) -> float:
    if not is_number(value):
        raise bad_params(where, f"{path} must be a number")
    return float(value)


def _instance_of(kind: type) -> Decoder:
    def instance_of(value: Any, path: str, where: str) -> Any:
        if not isinstance(value, kind) or (kind is int and type(value) is bool):
            raise bad_params(where, f"{path} must be {kind.__name__}")
        return value

    return instance_of


_FIELDS: dict[type, tuple[tuple[str, Decoder, bool], ...]] = {}


def _fields_of(cls: type) -> tuple[tuple[str, Decoder, bool], ...]:
    """Each field of an answer: its name, its decoder, and whether the answer must hold it."""
    if cls not in _FIELDS:
        hints = get_type_hints(cls)
        _FIELDS[cls] = tuple(
            (f.name, _decoder(hints[f.name]), f.default is dataclasses.MISSING)
            for f in dataclasses.fields(cls)
        )
    return _FIELDS[cls]


def _answer(cls: type[A], data: Any, path: str, where: str) -> A:
    """The answer of type `cls` at `path` in the answer to `where`."""
    if not isinstance(data, dict):
        raise bad_params(where, f"{path or 'the answer'} must be an object")
    values = {}
    for name, decode, required in _fields_of(cls):
        if name in data:
            values[name] = decode(data[name], f"{path}.{name}" if path else name, where)
        elif required:
            raise bad_params(where, f"{path or 'the answer'} has no {name!r}")
    return cls(**values)


class Answer(Fields, metaclass=MessageType):
    """An answer whose `to_json` is its fields and `from_json` checks them by their types: a
    bad one is a `bad_params` RemoteError naming the answer (`where`) and the field. A subclass is
    a frozen slotted dataclass by its declaration alone: no decorator."""

    __slots__ = ()
    _nested = staticmethod(_json)

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        return _answer(cls, data, "", where)

    @classmethod
    def of(cls, record: object) -> Self:
        """The answer made of a record that has its fields (and maybe more)."""
        return cls(*[getattr(record, f.name) for f in dataclasses.fields(cls)])


def parsed(kind: type[A], data: Any, where: str, error: Callable[[str], Exception]) -> A:
    """The answer of type `kind` in `data`, or `error(message)` raised, the message saying what
    is wrong with it: each reader's own error for an answer it cannot use."""
    try:
        return kind.from_json(data, where)
    except RemoteError as exc:
        raise error(exc.message) from None
