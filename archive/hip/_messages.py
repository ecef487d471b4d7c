"""HIP messages whose JSON is derived from their dataclass fields rather than spelled out.

`Fields` gives `to_json`: an object of the fields by name, in their order, where a tuple goes as
a list (of their JSON, for a tuple of messages) and a field declared with `left_out` is left out
while it has its default. `Message` gives `from_json` too, for a message whose fields are all
required and of a JSON type (str, int, bool, dict, list, or float, which takes any finite
number): a bad one is a `bad_params` RemoteError naming the call and the field, and `check` may
add what the types cannot say. Each class's table of fields is worked out once, at its first
use. `Names` is the params of a call that names files.
"""

import dataclasses
import math
import types
from typing import Any, ClassVar, Self, TypeGuard, Union, get_args, get_origin, get_type_hints

from archive.hip._methods import as_object, bad_params, field
from archive.hip._params import name_list

# The types a derived `from_json` checks a field against (float apart: a number).
_JSON_TYPES = (str, int, bool, dict, list)
# How a field goes in JSON: as it is, as a list, or as the list of its messages' JSON.
_AS_IS, _AS_LIST, _AS_MESSAGES = range(3)
# The metadata key of a field that `to_json` leaves out while it has its default.
_LEFT_OUT = "hip_left_out"
# The default of a field `to_json` never leaves out.
_KEPT = object()
# The tables of _encoding and _decoding, by class.
_ENCODINGS: dict[type, tuple[tuple[str, int, Any], ...]] = {}
_DECODINGS: dict[type, tuple[tuple[str, type], ...]] = {}


def left_out(default: Any) -> Any:
    """The declaration of a field with `default`, which `to_json` leaves out while it has it."""
    return dataclasses.field(default=default, metadata={_LEFT_OUT: True})


def is_number(value: object) -> TypeGuard[float]:
    """Whether `value` is a finite JSON number (a bool is none)."""
    return not isinstance(value, bool) and isinstance(value, int | float) and math.isfinite(value)


def _form(hint: Any) -> int:
    """How a field of type `hint` goes in JSON (a tuple, possibly None, is no JSON type)."""
    if get_origin(hint) in (Union, types.UnionType):
        return max(_form(arg) for arg in get_args(hint))
    if get_origin(hint) is not tuple:
        return _AS_IS
    item = get_args(hint)[0]
    return _AS_MESSAGES if isinstance(item, type) and issubclass(item, Fields) else _AS_LIST


def _encoding(cls: type) -> tuple[tuple[str, int, Any], ...]:
    """Each field's name, how it goes in JSON, and the default it is left out with (or _KEPT)."""
    if cls not in _ENCODINGS:
        hints = get_type_hints(cls)
        _ENCODINGS[cls] = tuple(
            (f.name, _form(hints[f.name]), f.default if f.metadata.get(_LEFT_OUT) else _KEPT)
            for f in dataclasses.fields(cls)
        )
    return _ENCODINGS[cls]


def _decoding(cls: type) -> tuple[tuple[str, type], ...]:
    """Each field's name and the type its JSON value must have."""
    if cls not in _DECODINGS:
        hints = get_type_hints(cls)
        table = []
        for f in dataclasses.fields(cls):
            kind = get_origin(hints[f.name]) or hints[f.name]
            optional = (
                f.default is not dataclasses.MISSING or f.default_factory is not dataclasses.MISSING
            )
            if optional or not (kind is float or kind in _JSON_TYPES):
                raise TypeError(f"{cls.__name__}.{f.name}: from_json is not derived for it")
            table.append((f.name, kind))
        _DECODINGS[cls] = tuple(table)
    return _DECODINGS[cls]


class Fields:
    """A dataclass message whose `to_json` is its fields."""

    __slots__ = ()

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {}
        for name, form, omitted in _encoding(type(self)):
            value = getattr(self, name)
            if value == omitted:
                continue
            if value is None or form == _AS_IS:
                data[name] = value
            elif form == _AS_LIST:
                data[name] = list(value)
            else:
                data[name] = [item.to_json() for item in value]
        return data


class Message(Fields):
    """A dataclass message whose `from_json` checks its fields by their types, then `check`."""

    __slots__ = ()

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        params = as_object(data, method)
        message = cls(
            *[
                _number(params, key, method) if kind is float else field(params, key, kind, method)
                for key, kind in _decoding(cls)
            ]
        )
        message.check(method)
        return message

    def check(self, method: str) -> None:
        """Raise a bad_params RemoteError where the fields, each of its type, are still wrong."""


def _number(data: dict[str, Any], key: str, method: str) -> float:
    """The value of a field that must be a number."""
    value = data.get(key)
    if not is_number(value):
        raise bad_params(method, f"{key!r} must be a number")
    return float(value)


@dataclasses.dataclass(frozen=True, slots=True)
class Names(Fields):
    """The params of a call that names files, each 64 lowercase hex digits: at most `most`."""

    names: list[str]
    most: ClassVar[int]

    @classmethod
    def from_json(cls, data: Any, method: str) -> Self:
        return cls(name_list(data, method, cls.most))
