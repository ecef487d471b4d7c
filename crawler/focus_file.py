"""A campaign's focus (archive/crawl_calls.py Focus) read from the YAML file `dlweb scheduler
--focus` or `dlweb crawl --focus` names, checked at start: a bad file is refused with the line
at fault.

The file maps some of keywords, examples, url_scores, spam, weights and update to their values.
An example is a text, or the path of a text file (relative to the focus file's folder), read up
to the length of an example text.
"""

import re
from pathlib import Path
from typing import Any

import yaml

from archive.crawl_calls import MAX_FOCUS_TEXT, Focus
from archive.errors import DlwebError
from archive.hip import RemoteError
from archive.yaml_safe import safe_load

__all__ = ["FOCUS_KEYS", "MAX_FOCUS_FILE", "load_focus"]

FOCUS_KEYS = ("keywords", "examples", "url_scores", "spam", "weights", "update")
MAX_FOCUS_FILE = 4 * 2**20  # bytes
MAX_PATH = 4_096  # characters of an example that may name a file


def load_focus(path: Path) -> Focus:
    """The focus a file describes; DlwebError naming the file and line of what is wrong."""
    try:
        with path.open("rb") as file:
            raw = file.read(MAX_FOCUS_FILE + 1)
        text = raw.decode("utf-8")
    except OSError as exc:
        raise DlwebError(f"cannot read the focus file: {exc.strerror}", where=path) from None
    except UnicodeDecodeError:
        raise DlwebError("the focus file is not UTF-8 text", where=path) from None
    if len(raw) > MAX_FOCUS_FILE:
        raise DlwebError(f"the focus file is over {MAX_FOCUS_FILE // 2**20} MiB", where=path)
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}" if mark else ""
        raise DlwebError(f"not valid YAML{at}", where=path) from None
    if not isinstance(data, dict) or not isinstance(node, yaml.MappingNode):
        raise DlwebError(f"a focus file maps some of {', '.join(FOCUS_KEYS)}", where=path)
    lines = {str(key.value): key.start_mark.line + 1 for key, _ in node.value}
    for key in data:
        if key not in FOCUS_KEYS:
            raise DlwebError(
                f"line {lines.get(str(key), 1)}: unknown key {str(key)[:80]!r}; a focus file"
                f" maps some of {', '.join(FOCUS_KEYS)}",
                where=path,
            )
    examples = data.get("examples")
    if isinstance(examples, list):
        data["examples"] = [_example(path.parent, item) for item in examples]
    try:
        return Focus.from_json(data, "focus")
    except RemoteError as exc:
        named = re.search(r"focus\.(\w+)", exc.message)
        line = lines.get(named.group(1), 1) if named else 1
        message = exc.message.removeprefix("order field ")
        raise DlwebError(f"line {line}: {message}", where=path) from None


def _example(folder: Path, item: Any) -> Any:
    """An example text: `item` itself, or the text of the file it names."""
    if not isinstance(item, str) or "\n" in item or not 0 < len(item) <= MAX_PATH:
        return item
    file = folder / item
    try:
        if not file.is_file():
            return item
        with file.open("rb") as opened:
            return opened.read(MAX_FOCUS_TEXT * 4).decode("utf-8", "replace")[:MAX_FOCUS_TEXT]
    except OSError:
        return item
