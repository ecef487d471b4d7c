"""Checks of call params that several agents' handlers share."""

from typing import Any

from archive.hashing import is_valid_name
from archive.hip._errors import RemoteError


def name_list(params: Any, method: str, limit: int) -> list[str]:
    """The `names` of a call's params, at most `limit`, each 64 lowercase hex digits; otherwise
    a bad_params RemoteError saying what is wrong and where."""
    if not isinstance(params, dict) or not isinstance(params.get("names"), list):
        raise RemoteError("bad_params", f"{method}: params must be {{names: [...]}}")
    names = params["names"]
    if len(names) > limit:
        raise RemoteError("bad_params", f"{method}: at most {limit} names a call, not {len(names)}")
    for index, name in enumerate(names):
        if not isinstance(name, str) or not is_valid_name(name):
            raise RemoteError(
                "bad_params", f"{method}: names[{index}] is not 64 lowercase hex digits"
            )
    return list(names)
