"""Fuzzy matching: which archived URL of a path stands for a requested URL never captured as is.

A browser replaying a page asks for URLs that differ from the captured ones only by a cache
buster, a timestamp, a tracking or session parameter. The lookup gives the requested URL and the
archived URLs of the same path (up to `?`), nearest capture first; `FuzzyRules.match` picks one
by rules kept in YAML: built-in defaults (fuzzy_rules.yaml beside this module) extended by an
operator's file. The schema, the order of the tests and the score are in docs/fuzzy.md.
"""

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import NamedTuple
from urllib.parse import unquote_plus, urlsplit

import idna
import yaml

from .errors import ConfigError
from .url_parts import MAX_URL_LENGTH

DEFAULT_RULES_FILE = "fuzzy_rules.yaml"
NAME_WEIGHT = 0.6  # of the score: the share of parameter names found on both sides
VALUE_WEIGHT = 0.4  # of the score: how close the values of those parameters are
COMPARED_LENGTH = 256  # characters of a value compared by edit distance
MAX_STATIC_CANDIDATES = 100

_NAMES_CACHED = 4096
_SHOWN_LENGTH = 60
_NUMBER = re.compile(r"-?[0-9]{1,20}(?:\.[0-9]{1,20})?")
_RULE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
_DOMAIN = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
_EXTENSION = re.compile(r"[a-z0-9_-]{1,16}")
_YAML = "tag:yaml.org,2002:"
_SCALAR_TAGS = frozenset(_YAML + kind for kind in ("str", "int", "float", "bool", "timestamp"))
_RULE_KEYS = ("name", "domains", "ignore", "require", "text", "static", "min_score")
_IGNORE_KEYS = ("name", "name_pattern", "value")
_STATIC_KEYS = ("extensions", "max_candidates")


@dataclass(frozen=True)
class FuzzyMatch:
    """The archived URL chosen for a request, and why, for a log line and a response header."""

    url: str
    rule: str


class _Ignore(NamedTuple):
    """One `ignore` entry: parameters dropped by exact name or name pattern, maybe by value."""

    names: frozenset[str]  # lowercase
    pattern: re.Pattern[str] | None
    value: re.Pattern[str] | None


class _Rule(NamedTuple):
    name: str
    domains: tuple[str, ...]  # empty: every domain
    ignore: tuple[_Ignore, ...]
    require: frozenset[str]
    text: frozenset[str]
    extensions: frozenset[str]
    max_candidates: int | None
    min_score: float | None


class _Kind(NamedTuple):
    """What the rules of a profile say of one parameter name."""

    ignore: tuple[tuple[re.Pattern[str] | None, str], ...]  # value pattern (None: any), rule
    required: bool
    text: bool


class _Query(NamedTuple):
    kept: tuple[tuple[str, str], ...]  # sorted name=value pairs, neither ignored nor required
    required: tuple[tuple[str, str], ...]  # sorted pairs of the required parameters
    ignored: frozenset[str]  # names of the rules that dropped a parameter


class _Profile:
    """The rules that apply to one set of hosts, merged and precomputed."""

    def __init__(self, rules: Iterable[_Rule]) -> None:
        self.exact: dict[str, list[tuple[re.Pattern[str] | None, str]]] = {}
        self.patterns: list[tuple[re.Pattern[str], re.Pattern[str] | None, str]] = []
        self.static: dict[str, str] = {}
        require: set[str] = set()
        text: set[str] = set()
        self.max_candidates = 0
        self.min_score: float | None = None
        self.score_rule = ""
        for rule in rules:
            for entry in rule.ignore:
                for name in entry.names:
                    self.exact.setdefault(name, []).append((entry.value, rule.name))
                if entry.pattern is not None:
                    self.patterns.append((entry.pattern, entry.value, rule.name))
            require |= rule.require
            text |= rule.text
            for extension in rule.extensions:
                self.static.setdefault(extension, rule.name)
            if rule.max_candidates is not None:
                self.max_candidates = rule.max_candidates
            if rule.min_score is not None:
                self.min_score, self.score_rule = rule.min_score, rule.name
        self.require, self.text = frozenset(require), frozenset(text)
        self.kinds: dict[str, _Kind] = {}

    def kind(self, name: str) -> _Kind:
        """What the rules say of a parameter name, decided once per name."""
        kind = self.kinds.get(name)
        if kind is None:
            lower = name.lower()
            ignore = list(self.exact.get(lower, ()))
            ignore.extend(
                (value, rule) for pattern, value, rule in self.patterns if pattern.fullmatch(lower)
            )
            kind = _Kind(tuple(ignore), lower in self.require, lower in self.text)
            if len(self.kinds) >= _NAMES_CACHED:
                self.kinds.clear()
            self.kinds[name] = kind
        return kind

    def parse(self, query: str) -> _Query:
        """A query split into the parameters kept for comparison and the required ones."""
        kept: list[tuple[str, str]] = []
        required: list[tuple[str, str]] = []
        ignored: set[str] = set()
        encoded = "%" in query or "+" in query
        kinds = self.kinds
        for piece in query.split("&"):
            if not piece:
                continue
            name, _, value = piece.partition("=")
            if encoded:
                name, value = unquote_plus(name), unquote_plus(value)
            kind = kinds.get(name) or self.kind(name)
            if kind.required:
                required.append((name, value))
                continue
            for value_pattern, rule in kind.ignore:
                if value_pattern is None or value_pattern.fullmatch(value):
                    ignored.add(rule)
                    break
            else:
                kept.append((name, value))
        kept.sort()
        required.sort()
        return _Query(tuple(kept), tuple(required), frozenset(ignored))


class FuzzyRules:
    """A set of fuzzy matching rules, compiled once; `match` picks a candidate for a request."""

    def __init__(self, rules: Sequence[_Rule]) -> None:
        self._rules = tuple(rules)
        self._everywhere = tuple(i for i, rule in enumerate(self._rules) if not rule.domains)
        self._by_domain: dict[str, list[int]] = {}
        for index, rule in enumerate(self._rules):
            for domain in rule.domains:
                self._by_domain.setdefault(domain, []).append(index)
        self._default = _Profile(self._rules[i] for i in self._everywhere)
        self._profiles: dict[tuple[int, ...], _Profile] = {(): self._default}

    @classmethod
    def load(cls, extra: Path | None = None) -> "FuzzyRules":
        """The built-in rules, extended by the operator's file `extra` when given."""
        resource = resources.files(__package__).joinpath(DEFAULT_RULES_FILE)
        rules = _Reader(str(resource), set()).rules(resource.read_text(encoding="utf-8"))
        if extra is not None:
            try:
                text = Path(extra).read_text(encoding="utf-8")
            except FileNotFoundError:
                raise ConfigError(f"{extra}: fuzzy rules file not found") from None
            except (OSError, UnicodeDecodeError) as exc:
                raise ConfigError(f"{extra}: cannot read the fuzzy rules: {exc}") from None
            rules += _Reader(str(extra), {rule.name for rule in rules}).rules(text)
        return cls(rules)

    @classmethod
    def from_text(cls, text: str, source: str) -> "FuzzyRules":
        """The rules of one YAML text alone, without the built-in ones; `source` names it."""
        return cls(_Reader(source, set()).rules(text))

    def match(self, requested: str, candidates: Sequence[str]) -> FuzzyMatch | None:
        """The candidate that stands for `requested`, or None. The candidates share its path and
        come nearest capture first; the first of equal ones wins."""
        if len(requested) > MAX_URL_LENGTH:
            return None
        path, _, query = requested.partition("#")[0].partition("?")
        profile = self._profile(path)
        request = profile.parse(query)
        eligible: list[tuple[str, _Query]] = []
        seen: set[str] = set()
        for url in candidates:
            if url in seen or len(url) > MAX_URL_LENGTH:
                continue
            seen.add(url)
            candidate = profile.parse(url.partition("#")[0].partition("?")[2])
            if candidate.required != request.required:
                continue
            if candidate.kept == request.kept:
                return FuzzyMatch(url, _same_query(request.ignored | candidate.ignored))
            eligible.append((url, candidate))
        if not eligible:
            return None
        if profile.min_score is not None:
            scored = _closest(profile, request, eligible, profile.min_score)
            if scored is not None:
                return FuzzyMatch(
                    scored[0],
                    f"{profile.score_rule}: score {scored[1]:.2f} >= {profile.min_score:.2f}",
                )
        extension = _extension(path)
        rule = profile.static.get(extension)
        if rule is not None and len(eligible) <= profile.max_candidates:
            count = len(eligible)
            which = "only candidate" if count == 1 else f"nearest of {count} candidates"
            return FuzzyMatch(eligible[0][0], f"{rule}: .{extension}, {which}")
        return None

    def _profile(self, path: str) -> _Profile:
        """The merged rules for the host of `path`: everywhere rules and its domains' rules."""
        if not self._by_domain:
            return self._default
        host = _host(path)
        labels = host.split(".")
        found: list[int] = []
        for start in range(len(labels)):
            found.extend(self._by_domain.get(".".join(labels[start:]), ()))
        key = tuple(sorted(set(found)))
        profile = self._profiles.get(key)
        if profile is None:
            indices = sorted(self._everywhere + key)
            profile = self._profiles[key] = _Profile(self._rules[i] for i in indices)
        return profile


def _same_query(ignored: frozenset[str]) -> str:
    if ignored:
        return f"same query without {', '.join(sorted(ignored))}"
    return "same query in another order or encoding"


def _host(path: str) -> str:
    """The lowercase host of a URL, "" when it has none or is malformed."""
    try:
        host = urlsplit(path).hostname or ""
    except ValueError:
        return ""
    host = host.rstrip(".")
    if not host.isascii():
        try:
            host = idna.encode(host, uts46=True).decode("ascii")
        except UnicodeError:
            return ""
    return host


def _extension(path: str) -> str:
    """The lowercase extension of the last segment of a URL's path, "" when it has none."""
    rest = path.partition("//")[2] if "//" in path else path
    segment = rest.partition("/")[2].rpartition("/")[2].partition(";")[0]
    stem, dot, extension = segment.rpartition(".")
    return extension.lower() if dot and stem else ""


def _closest(
    profile: _Profile, request: _Query, eligible: list[tuple[str, _Query]], least: float
) -> tuple[str, float] | None:
    """The candidate of best score, the first of equal ones, if its score is at least `least`."""
    compare = _Comparer(profile, _by_name(request.kept))
    best: tuple[str, float] | None = None
    scored: set[tuple[tuple[str, str], ...]] = set()
    for url, candidate in eligible:
        if candidate.kept in scored:
            continue
        scored.add(candidate.kept)
        score = compare.score(_by_name(candidate.kept), best[1] if best else least)
        if score is not None and (score > best[1] if best else score >= least):
            best = (url, score)
    return best


def _by_name(pairs: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    values: dict[str, list[str]] = {}
    for name, value in pairs:
        values.setdefault(name, []).append(value)
    return values


class _Comparer:
    """Scores the candidates of one request, remembering what it computed for the next ones."""

    def __init__(self, profile: _Profile, wanted: dict[str, list[str]]) -> None:
        self.profile = profile
        self.wanted = wanted
        self.memo: dict[tuple[str, str, bool], float] = {}

    def score(self, found: dict[str, list[str]], floor: float) -> float | None:
        """NAME_WEIGHT times the number of names found on both sides plus VALUE_WEIGHT times the
        closeness of their values, summed, over the number of distinct names on either side;
        None when it cannot reach `floor`."""
        names = len(self.wanted.keys() | found.keys())
        common = self.wanted.keys() & found.keys()
        if names == 0 or (NAME_WEIGHT + VALUE_WEIGHT) * len(common) / names < floor:
            return None
        closeness = 0.0
        for name in common:
            ours, theirs = self.wanted[name], found[name]
            if ours == theirs:
                closeness += 1.0
                continue
            text = self.profile.kind(name).text
            if len(ours) == 1 and len(theirs) == 1:
                one, other = ours[0], theirs[0]
            else:
                one, other, text = "&".join(ours), "&".join(theirs), True
            key = (one, other, text)
            value = self.memo.get(key)
            if value is None:
                value = self.memo[key] = _similarity(one, other, text)
            closeness += value
        return (NAME_WEIGHT * len(common) + VALUE_WEIGHT * closeness) / names


def _similarity(one: str, other: str, text: bool) -> float:
    """1 for equal values, down to 0: numbers by relative difference, text by the edit distance
    of the first COMPARED_LENGTH characters over the length of the longer."""
    if not text and _NUMBER.fullmatch(one) and _NUMBER.fullmatch(other):
        a, b = float(one), float(other)
        largest = max(abs(a), abs(b))
        return 1.0 if largest == 0 else max(0.0, 1.0 - abs(a - b) / largest)
    one, other = one[:COMPARED_LENGTH], other[:COMPARED_LENGTH]
    longest = max(len(one), len(other))
    return 1.0 if longest == 0 else 1.0 - _levenshtein(one, other) / longest


def _levenshtein(one: str, other: str) -> int:
    """The edit distance of two strings, without what they share at both ends."""
    if one[:1] == other[:1]:
        same = _common_length(one, other, lambda text, length: text[:length])
        one, other = one[same:], other[same:]
    if one[-1:] == other[-1:]:
        same = _common_length(one, other, lambda text, length: text[len(text) - length :])
        one, other = one[: len(one) - same], other[: len(other) - same]
    if len(one) < len(other):
        one, other = other, one
    if not other:
        return len(one)
    bits: dict[str, int] = {}
    for position, char in enumerate(one):
        bits[char] = bits.get(char, 0) | 1 << position
    return _distance(bits, len(one), other)


def _common_length(one: str, other: str, end: Callable[[str, int], str]) -> int:
    """How many characters `one` and `other` share at the end that `end` cuts, by bisection."""
    low, high = 0, min(len(one), len(other))
    while low < high:
        middle = (low + high + 1) // 2
        if end(one, middle) == end(other, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _distance(bits: dict[str, int], length: int, text: str) -> int:
    """The edit distance between a non-empty pattern, given by its length and the positions of
    each of its characters as bits, and `text`, by the bit-parallel algorithm of Myers and Hyyrö:
    one step per character of `text`.
    pv and mv hold the +1 and -1 differences down the current column, ph and mh those across the
    last row; bits above `length` hold garbage that never reaches the bits below."""
    last = 1 << (length - 1)
    pv, mv, distance = (1 << length) - 1, 0, length
    positions = bits.get
    for char in text:
        eq = positions(char, 0)
        xv = eq | mv
        xh = (((eq & pv) + pv) ^ pv) | eq
        ph = mv | ~(xh | pv)
        mh = pv & xh
        if ph & last:
            distance += 1
        elif mh & last:
            distance -= 1
        ph = (ph << 1) | 1
        pv = (mh << 1) | ~(xv | ph)
        mv = ph & xv
    return distance


def _label(node: yaml.Node, number: int) -> str:
    """How messages name a rule until its name is read: by the name it gives, else its number."""
    label = f"rule #{number}"
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            if key.value == "name" and isinstance(value, yaml.ScalarNode) and value.value:
                label = f"rule {value.value!r}"
    return label


class _Reader:
    """Reads one rules file from its YAML node tree, so that every error names its line."""

    def __init__(self, source: str, taken: set[str]) -> None:
        self.source = source
        self.taken = taken  # rule names already used, in this file or an earlier one
        self.rule = ""  # the rule being read, for messages

    def fail(self, node: yaml.Node, where: str, message: str) -> ConfigError:
        place = f"{self.source}, line {node.start_mark.line + 1}"
        subject = ": ".join(part for part in (self.rule, where) if part)
        return ConfigError(f"{place}: {subject}: {message}" if subject else f"{place}: {message}")

    def rules(self, text: str) -> list[_Rule]:
        try:
            root = yaml.compose(text, Loader=yaml.SafeLoader)
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            at = f", line {mark.line + 1}" if mark else ""
            problem = getattr(exc, "problem", None) or "malformed"
            raise ConfigError(f"{self.source}{at}: not valid YAML: {problem}") from None
        if root is None:
            return []
        listed = self.mapping(root, "", ("rules",)).get("rules")
        if listed is None or listed.tag == _YAML + "null":
            return []
        if not isinstance(listed, yaml.SequenceNode):
            raise self.fail(listed, "rules", "must be a list of rules")
        return [self.read_rule(node, number) for number, node in enumerate(listed.value, 1)]

    def read_rule(self, node: yaml.Node, number: int) -> _Rule:
        self.rule = _label(node, number)
        fields = self.mapping(node, "", _RULE_KEYS)
        name = self.rule_name(node, fields)
        if not set(fields) - {"name", "domains"}:
            raise self.fail(
                node, "", "says nothing: give ignore, require, text, static or min_score"
            )
        ignore = self.ignores(fields)
        extensions, max_candidates = self.static_settings(fields)
        min_score = None
        if "min_score" in fields:
            min_score = self.number(fields["min_score"], "min_score", 1, integer=False)
        return _Rule(
            name=name,
            domains=tuple(
                self.domain(value, item, where)
                for value, item, where in self.strings(fields, "domains")
            ),
            ignore=ignore,
            require=frozenset(value.lower() for value, _, _ in self.strings(fields, "require")),
            text=frozenset(value.lower() for value, _, _ in self.strings(fields, "text")),
            extensions=extensions,
            max_candidates=max_candidates,
            min_score=min_score,
        )

    def rule_name(self, node: yaml.Node, fields: dict[str, yaml.Node]) -> str:
        """The rule's name, valid and not taken yet; it names the rule in later messages."""
        if "name" not in fields:
            raise self.fail(node, "name", "is required")
        name = self.string(fields["name"], "name")
        if not _RULE_NAME.fullmatch(name):
            raise self.fail(
                fields["name"], "name", f"{_shown(name)} is not 1 to 64 letters, digits, . - _"
            )
        if name in self.taken:
            raise self.fail(fields["name"], "name", f"{name!r} already names another rule")
        self.taken.add(name)
        self.rule = f"rule {name!r}"
        return name

    def ignores(self, fields: dict[str, yaml.Node]) -> tuple[_Ignore, ...]:
        if "ignore" not in fields:
            return ()
        entries = fields["ignore"]
        if not isinstance(entries, yaml.SequenceNode) or not entries.value:
            raise self.fail(entries, "ignore", "must be a non-empty list of parameters")
        return tuple(
            self.ignore(entry, f"ignore[{index}]") for index, entry in enumerate(entries.value)
        )

    def static_settings(self, fields: dict[str, yaml.Node]) -> tuple[frozenset[str], int | None]:
        """The rule's `static` extensions and max_candidates, none when it has no `static`."""
        extensions: frozenset[str] = frozenset()
        max_candidates = None
        if "static" in fields:
            static = self.mapping(fields["static"], "static", _STATIC_KEYS)
            if not static:
                raise self.fail(fields["static"], "static", "give extensions or max_candidates")
            extensions = frozenset(
                self.extension(value, item, where)
                for value, item, where in self.strings(static, "extensions", "static")
            )
            if "max_candidates" in static:
                max_candidates = int(
                    self.number(
                        static["max_candidates"],
                        "static.max_candidates",
                        MAX_STATIC_CANDIDATES,
                        integer=True,
                    )
                )
        return extensions, max_candidates

    def ignore(self, node: yaml.Node, where: str) -> _Ignore:
        fields = self.mapping(node, where, _IGNORE_KEYS)
        if ("name" in fields) == ("name_pattern" in fields):
            raise self.fail(node, where, "give either name or name_pattern")
        names = frozenset(value.lower() for value, _, _ in self.strings(fields, "name", where))
        pattern = value = None
        if "name_pattern" in fields:
            pattern = self.regex(fields["name_pattern"], f"{where}.name_pattern", re.IGNORECASE)
        if "value" in fields:
            value = self.regex(fields["value"], f"{where}.value", 0)
        return _Ignore(names, pattern, value)

    def mapping(
        self, node: yaml.Node, where: str, allowed: tuple[str, ...]
    ) -> dict[str, yaml.Node]:
        """The values of a mapping by key; an unknown or repeated key is refused."""
        if not isinstance(node, yaml.MappingNode):
            raise self.fail(node, where, f"must be a mapping (keys: {', '.join(allowed)})")
        fields: dict[str, yaml.Node] = {}
        for key_node, value_node in node.value:
            key = key_node.value if isinstance(key_node, yaml.ScalarNode) else None
            inside = ".".join(part for part in (where, str(key)) if part)
            if key not in allowed:
                raise self.fail(key_node, inside, f"unknown key (known: {', '.join(allowed)})")
            if key in fields:
                raise self.fail(key_node, inside, "repeated key")
            fields[key] = value_node
        return fields

    def string(self, node: yaml.Node, where: str) -> str:
        """A scalar as written (so that `no` or `1` stay text), never empty."""
        if not isinstance(node, yaml.ScalarNode) or node.tag not in _SCALAR_TAGS:
            raise self.fail(node, where, "must be a string")
        if not node.value:
            raise self.fail(node, where, "must not be empty")
        return str(node.value)

    def strings(
        self, fields: dict[str, yaml.Node], key: str, inside: str = ""
    ) -> list[tuple[str, yaml.Node, str]]:
        """A string or a non-empty list of strings under `key`: each with its node and place."""
        node = fields.get(key)
        if node is None:
            return []
        where = f"{inside}.{key}" if inside else key
        if not isinstance(node, yaml.SequenceNode):
            return [(self.string(node, where), node, where)]
        if not node.value:
            raise self.fail(node, where, "must not be an empty list")
        places = [(item, f"{where}[{index}]") for index, item in enumerate(node.value)]
        return [(self.string(item, place), item, place) for item, place in places]

    def number(self, node: yaml.Node, where: str, high: int, *, integer: bool) -> float:
        """A number from 0 to `high`."""
        tags = (_YAML + "int",) if integer else (_YAML + "int", _YAML + "float")
        expected = f"{'a whole number' if integer else 'a number'} from 0 to {high}"
        if not isinstance(node, yaml.ScalarNode) or node.tag not in tags:
            raise self.fail(node, where, f"must be {expected}")
        value = yaml.SafeLoader("").construct_object(node)
        if not 0 <= value <= high:
            raise self.fail(node, where, f"must be {expected}, not {node.value}")
        return float(value)

    def regex(self, node: yaml.Node, where: str, flags: int) -> re.Pattern[str]:
        text = self.string(node, where)
        try:
            return re.compile(text, flags)
        except (re.error, OverflowError, RecursionError) as exc:
            raise self.fail(node, where, f"bad regular expression {_shown(text)}: {exc}") from None

    def domain(self, text: str, node: yaml.Node, where: str) -> str:
        """A domain name as hosts are compared: lowercase, punycode, no final dot."""
        domain = text.strip().lower().rstrip(".")
        if not domain.isascii():
            try:
                domain = idna.encode(domain, uts46=True).decode("ascii")
            except UnicodeError:
                domain = ""
        if not _DOMAIN.fullmatch(domain):
            raise self.fail(node, where, f"{_shown(text)} is not a domain name")
        return domain

    def extension(self, text: str, node: yaml.Node, where: str) -> str:
        extension = text.lower().removeprefix(".")
        if not _EXTENSION.fullmatch(extension):
            raise self.fail(node, where, f"{_shown(text)} is not a file extension")
        return extension


def _shown(text: str) -> str:
    return repr(text if len(text) <= _SHOWN_LENGTH else text[:_SHOWN_LENGTH] + "...")
