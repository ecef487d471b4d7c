"""JSON between dlweb processes (RPC frames, a storage node's batches), through orjson: several
times faster than the json module on the cluster's large batches. Compact UTF-8; integers must fit
in 64 bits; NaN and Infinity are refused when read."""

from typing import Any

import orjson

loads = orjson.loads


def dumps(obj: Any) -> str:
    """Compact JSON text; dictionary keys that are not strings are written as strings, as the
    json module does."""
    return orjson.dumps(obj, option=orjson.OPT_NON_STR_KEYS).decode()
