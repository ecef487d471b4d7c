"""HIP messages whose JSON is derived from their dataclass fields rather than spelled out.

`Fields` gives `to_json`: an object of the fields by name, in their order, where a tuple goes as
a list (of their JSON, for a tuple of messages) and a field declared with `left_out` is left out
while it has its default. As dataclasses does a class's `__init__`, each class's `to_json` is
written as source and compiled, once, at its first call: a dict display of the fields (those left
out added after it, each under an `if`), so that it costs about what a method spelled out would.

`Message` (and `archive.answers.Answer`) makes each subclass a frozen slotted dataclass as it is
declared, through its metaclass `MessageType`: a message needs no decorator, so none can lack it.
`Message` gives `from_json` too, for a message whose fields are all required and of a JSON type
(str, int, bool, dict, list, or float, which takes any finite number): a bad one is a
`bad_params` RemoteError naming the call and the field, and `check` may add what the types cannot
say; its table of fields is worked out once a class, at its first use. `Names` is the params of
a call that names files.
"""

import dataclasses
import keyword
import math
import types
from collections.abc import Callable
from typing import (
    Any,
    ClassVar,
    Self,
    TypeGuard,
    Union,
    cast,
    dataclass_transform,
    get_args,
    get_origin,
    get_type_hints,
)

from archive.hip._methods import as_object, bad_params, field
from archive.hip._params import name_list

# The types a derived `from_json` checks a field against (float apart: a number).
_JSON_TYPES = (str, int, bool, dict, list)
# How a field goes in JSON: as it is, as a list, or as the list of its messages' JSON.
_AS_IS, _AS_LIST, _AS_MESSAGES = range(3)
# The metadata key of a field that `to_json` leaves out while it has its default.
_LEFT_OUT = "hip_left_out"
# Each class's derived `to_json`, made at its first call, and its table for `from_json`.
_TO_JSON: dict[type, Callable[["Fields"], dict[str, Any]]] = {}
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


def _may_be_none(hint: Any) -> bool:
    if get_origin(hint) in (Union, types.UnionType):
        return any(_may_be_none(arg) for arg in get_args(hint))
    return hint in (type(None), Any, object)


def _may_nest(hint: Any) -> bool:
    """Whether a field of type `hint` may hold a message or a dict (a hint not a class may)."""
    if get_origin(hint) in (Union, types.UnionType):
        return any(_may_nest(arg) for arg in get_args(hint))
    kind = get_origin(hint) or hint
    if hint is Any or not isinstance(kind, type):
        return True
    return issubclass(kind, (Fields, dict)) or issubclass(dict, kind) or issubclass(Fields, kind)


def _value(f: dataclasses.Field[Any], hint: Any, nested: bool) -> str:
    """The expression of a field's JSON in the source of a derived `to_json`."""
    value = f"self.{f.name}"
    form = _form(hint)
    if form == _AS_IS:
        return f"_nested({value})" if nested and _may_nest(hint) else value
    encoded = f"list({value})" if form == _AS_LIST else f"[item.to_json() for item in {value}]"
    left_out_when_none = f.metadata.get(_LEFT_OUT) and f.default is None
    if (f.default is None or _may_be_none(hint)) and not left_out_when_none:
        return f"None if {value} is None else {encoded}"
    return encoded


def _derive(cls: type, nested: Callable[[Any], Any] | None) -> Callable[["Fields"], dict[str, Any]]:
    """The `to_json` of `cls`, written and compiled. Only its field names, checked to be
    identifiers, and names of its own go in the source; defaults are in its namespace."""
    hints = get_type_hints(cls)
    space: dict[str, Any] = {"_nested": nested}
    shown: list[str] = []  # the entries of the dict display, before any field left out
    added: list[str] = []  # the statements that add the fields after it
    for index, f in enumerate(dataclasses.fields(cls)):
        if not f.name.isidentifier() or keyword.iskeyword(f.name):
            raise TypeError(f"{cls.__name__}: field {f.name!r} is not an identifier")
        key, value = repr(f.name), _value(f, hints[f.name], nested is not None)
        if f.metadata.get(_LEFT_OUT):
            space[f"_default_{index}"] = f.default
            added += [
                f"    if self.{f.name} != _default_{index}:",
                f"        data[{key}] = {value}",
            ]
        elif added:
            added.append(f"    data[{key}] = {value}")
        else:
            shown.append(f"{key}: {value}")
    display = "{" + ", ".join(shown) + "}"
    body = (
        [f"    data = {display}", *added, "    return data"] if added else [f"    return {display}"]
    )
    exec("\n".join(["def to_json(self):", *body]), space)
    derived: Callable[[Fields], dict[str, Any]] = space["to_json"]
    derived.__qualname__ = f"{cls.__qualname__}.to_json"
    return derived


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
    # What the value of a field that may hold a message or a dict goes through in `to_json`
    # (None: it goes as it is); Answer's gives a nested answer's JSON.
    _nested: ClassVar[Any] = None

    def to_json(self) -> dict[str, Any]:
        derived = _TO_JSON.get(type(self))
        if derived is None:
            derived = _TO_JSON[type(self)] = _derive(type(self), self._nested)
        return derived(self)


@dataclass_transform(frozen_default=True, field_specifiers=(dataclasses.field,))
class MessageType(type):
    """The metaclass of Message and Answer: each subclass is a frozen slotted dataclass as it is
    declared, a class keyword (`kw_only=True`) passed on to `dataclass`, and a bare `super()` in
    its methods finds the class made. A class whose own namespace has `__slots__` is left as it
    is: a base of fields of none, or the slotted class `dataclass` makes again of one."""

    def __new__(
        mcs, name: str, bases: tuple[type, ...], namespace: dict[str, Any], **options: Any
    ) -> "MessageType":
        cls = super().__new__(mcs, name, bases, namespace)
        if "__slots__" in namespace:
            return cls
        made = cast(MessageType, dataclasses.dataclass(cls, frozen=True, slots=True, **options))
        if "__classcell__" in namespace:  # a method's super() or __class__: the class made
            namespace["__classcell__"].cell_contents = made
        return made


class Message(Fields, metaclass=MessageType):
    """A message whose `from_json` checks its fields by their types, then `check`. A subclass is
    a frozen slotted dataclass by its declaration alone: no decorator."""

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
