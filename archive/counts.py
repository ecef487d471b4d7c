"""Records of counters (what an insert, a browser or a repair pass did), written as their fields
alone: the base makes each a dataclass and gives it its JSON and its sum with another."""

from dataclasses import Field, dataclass, fields
from typing import Any, ClassVar, Self, dataclass_transform

from .hip import Fields


@dataclass_transform()
class Counts(Fields):
    """Subclasses are dataclasses whose fields are numbers starting at 0 (`pages: int = 0`)."""

    __dataclass_fields__: ClassVar[dict[str, Field[Any]]]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        dataclass(cls)

    def add(self, other: Self) -> None:
        """Add each counter of `other` to this one's."""
        for counter in fields(self):
            name = counter.name
            setattr(self, name, getattr(self, name) + getattr(other, name))
