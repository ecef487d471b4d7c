"""JSON answers between our processes over HTTP (the master's, an index node's, the scheduler's
API), typed once: the server builds the answer and serves `to_json()`, the reader takes it apart
with `from_json`, and both see the same fields.

An answer is a frozen dataclass whose JSON is its fields in order (`Fields`), a field declared
with `left_out` missing while it has its default, a nested answer (or a map or tuple of them) as
its own JSON. `from_json(data, where)` checks every field by its type hint (str, int, bool,
float for any finite number, `X | None`, a nested answer, `tuple[X, ...]` from a list,
`dict[str, X]`, `Any` as it is), a field with a default being optional, and raises a
`bad_params` RemoteError naming the answer (`where`) and the field at fault.
"""

import dataclasses
import types
from typing import Any, Self, TypeVar, Union, get_args, get_origin, get_type_hints

from .hip import Fields, bad_params, is_number

__all__ = ["Answer"]

_HINTS: dict[type, dict[str, Any]] = {}
A = TypeVar("A", bound="Answer")


def _json(value: Any) -> Any:
    """A field's JSON where Fields.to_json leaves it as it is: a nested answer, a map of them."""
    if isinstance(value, Fields):
        return value.to_json()
    if isinstance(value, dict):
        return {key: _json(item) for key, item in value.items()}
    return value


def _decode(hint: Any, value: Any, path: str, where: str) -> Any:
    """`value`, at `path` in the answer to `where`, checked against the type `hint` of its
    field, as that field holds it."""
    origin, args = get_origin(hint), get_args(hint)
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        (kind,) = (arg for arg in args if arg is not type(None))
        return _decode(kind, value, path, where)
    if origin is tuple:
        if not isinstance(value, list):
            raise bad_params(where, f"{path} must be a list")
        return tuple(_decode(args[0], item, f"{path}[{i}]", where) for i, item in enumerate(value))
    if origin is dict:
        if not isinstance(value, dict):
            raise bad_params(where, f"{path} must be an object")
        return {key: _decode(args[1], item, f"{path}.{key}", where) for key, item in value.items()}
    if isinstance(hint, type) and issubclass(hint, Answer):
        return _answer(hint, value, path, where)
    if hint is float:
        if not is_number(value):
            raise bad_params(where, f"{path} must be a number")
        return float(value)
    if hint is not Any and (not isinstance(value, hint) or (hint is int and type(value) is bool)):
        raise bad_params(where, f"{path} must be {hint.__name__}")
    return value


def _answer(cls: type[A], data: Any, path: str, where: str) -> A:
    """The answer of type `cls` at `path` in the answer to `where`."""
    if not isinstance(data, dict):
        raise bad_params(where, f"{path or 'the answer'} must be an object")
    if cls not in _HINTS:
        _HINTS[cls] = get_type_hints(cls)
    values = {}
    for f in dataclasses.fields(cls):  # type: ignore[arg-type]
        if f.name in data:
            at = f"{path}.{f.name}" if path else f.name
            values[f.name] = _decode(_HINTS[cls][f.name], data[f.name], at, where)
        elif f.default is dataclasses.MISSING:
            raise bad_params(where, f"{path or 'the answer'} has no {f.name!r}")
    return cls(**values)


class Answer(Fields):
    """An answer whose `to_json` is its fields and `from_json` checks them by their types: a
    bad one is a `bad_params` RemoteError naming the answer (`where`) and the field."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        return {key: _json(value) for key, value in super().to_json().items()}

    @classmethod
    def from_json(cls, data: Any, where: str) -> Self:
        return _answer(cls, data, "", where)

    @classmethod
    def of(cls, record: object) -> Self:
        """The answer made of a record that has its fields (and maybe more)."""
        return cls(*[getattr(record, f.name) for f in dataclasses.fields(cls)])  # type: ignore[arg-type]
