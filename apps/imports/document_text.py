"""A document's text read as a JSON value: JSON, else YAML. Pure: text in, value out.

YAML is read as libyaml's events, each value built as JSON has it (keys as text, other
tags as their text), without aliases (a few nested aliases expand to billions of nodes),
within the import's limits (limits.py: nesting, time). openapi.py makes a Document of the
value.
"""

from __future__ import annotations

import re
from typing import Any

import yaml

from apps.common import jsontext

from .errors import OpenAPIError
from .limits import Clock, ImportLimitExceeded, ImportLimits, too_deep

# How often (in YAML nodes composed) parsing looks at the import's clock.
_CLOCK_EVERY = 1_000

# libyaml's parser (PyYAML's wheels ship it) read as events, each value built as JSON has it:
# PyYAML's pure-Python loader spent 10 s of a 4 MB document's 17 s import, its C composer
# and constructor still 4 s; the events alone take a fraction of that.
_YAML_PARSER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_YAML_RESOLVER = yaml.resolver.Resolver()
_YAML_CONSTRUCTOR = yaml.constructor.SafeConstructor()
_MERGE = "tag:yaml.org,2002:merge"
_NO_KEY = object()


def _yaml_scalar(event: yaml.ScalarEvent) -> Any:
    """A scalar as JSON has it: null, booleans and numbers by YAML's resolution rules, every
    other tag (a date, binary) as its text; an integer too long to convert as a marker
    (refused below, with its place)."""
    tag = event.tag if event.tag not in (None, "!") else \
        _YAML_RESOLVER.resolve(yaml.ScalarNode, event.value, event.implicit)
    node = yaml.ScalarNode(tag, event.value)
    if tag == "tag:yaml.org,2002:null":
        return None
    if tag == "tag:yaml.org,2002:bool":
        return _YAML_CONSTRUCTOR.construct_yaml_bool(node)
    if tag == "tag:yaml.org,2002:float":
        return _YAML_CONSTRUCTOR.construct_yaml_float(node)
    if tag == "tag:yaml.org,2002:int":
        try:
            return _YAML_CONSTRUCTOR.construct_yaml_int(node)
        except ValueError:
            return jsontext.OversizedInteger(digits=len(event.value.lstrip("+-").replace("_", "")))
    return _MERGE if tag == _MERGE else event.value


def _yaml_value(text: str, limits: ImportLimits, clock: Clock | None) -> Any:
    """The one document of YAML `text` as JSON values (keys as text), without aliases (a few
    nested aliases expand to billions of nodes), nested at most `limits.max_depth` (a node's
    depth counts itself), within the import's time. Raises OpenAPIError (yaml.YAMLError for
    what the parser itself refuses), ImportLimitExceeded."""
    stack: list[list[Any]] = []  # [the open mapping or sequence, its pending key]
    root: Any = None
    documents = 0
    for event in yaml.parse(text, Loader=_YAML_PARSER):
        if isinstance(event, yaml.CollectionEndEvent):
            value = stack.pop()[0]
        elif isinstance(event, yaml.DocumentStartEvent):
            documents += 1
            if documents > 1:
                raise OpenAPIError(_yaml_place(event), "the YAML holds more than one document.")
            continue
        elif not isinstance(event, yaml.NodeEvent):
            continue
        else:
            where = _yaml_place(event)
            if isinstance(event, yaml.AliasEvent):
                raise OpenAPIError(where, "YAML aliases (*name) are not accepted; write the value out.")
            if clock is not None:
                clock.check(where, every=_CLOCK_EVERY)
            if len(stack) + 1 > limits.max_depth:
                raise ImportLimitExceeded(where, too_deep(limits.max_depth))
            if isinstance(event, yaml.ScalarEvent):
                value = _yaml_scalar(event)
            else:
                top = stack[-1] if stack else None
                if top is not None and isinstance(top[0], dict) and top[1] is _NO_KEY:
                    raise OpenAPIError(where, "a mapping's keys must be scalars.")
                stack.append([{} if isinstance(event, yaml.MappingStartEvent) else [], _NO_KEY])
                continue
        if not stack:
            root = value
            continue
        container = stack[-1]
        if isinstance(container[0], list):
            container[0].append(value)
        elif container[1] is _NO_KEY:
            container[1] = value if value is _MERGE else _json_key(value)
        else:
            _yaml_put(container[0], container[1], value, where)
            container[1] = _NO_KEY
    return root


def _yaml_place(event: yaml.Event) -> str:
    mark = event.start_mark
    return f"line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""


def _yaml_put(mapping: dict[str, Any], key: Any, value: Any, where: str) -> None:
    if key is not _MERGE:
        mapping[key] = value
        return
    # `<<: {...}` (or a list of mappings): their keys, where the mapping has none of its own.
    for merged in value if isinstance(value, list) else [value]:
        if not isinstance(merged, dict):
            raise OpenAPIError(where, "a merge key (<<) takes a mapping or a list of mappings.")
        for k, v in merged.items():
            mapping.setdefault(k, v)


def _json_key(key: Any) -> str:
    if isinstance(key, str):
        return key
    if key is None:
        return "null"
    if isinstance(key, bool):
        return "true" if key else "false"
    return str(key)


_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def _json_place_deeper_than(text: str, limit: int) -> str:
    """Where JSON `text` first nests deeper than `limit`: "line L, column C" (or "" if it does
    not). Read only after the decoder ran out of stack, so the cost is in the refusal."""
    depth = 0
    for token in _JSON_TOKEN.finditer(text):
        mark = token.group()
        if mark in "[{":
            depth += 1
            if depth > limit:
                at = token.start()
                line, column = text.count("\n", 0, at) + 1, at - text.rfind("\n", 0, at)
                return f"line {line}, column {column}"
        elif mark in "]}":
            depth -= 1
    return ""


def document_value(text: str, *, limits: ImportLimits, clock: Clock | None) -> Any:
    """The JSON value of a document's `text`: JSON, else its one YAML document. Raises
    OpenAPIError naming the place (neither JSON nor YAML, an alias, a key that is no scalar),
    ImportLimitExceeded for nesting deeper than `limits` or reading past the `clock`."""
    try:
        return jsontext.loads(text)
    except RecursionError:
        raise ImportLimitExceeded(_json_place_deeper_than(text, limits.max_depth),
                                  too_deep(limits.max_depth)) from None
    except ValueError:
        pass
    try:
        return _yaml_value(text, limits, clock)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark else ""
        if "maximum nesting depth" in str(getattr(exc, "problem", "")):
            # libyaml's scanner reads a flow collection ahead of the events that count it.
            raise ImportLimitExceeded(where, too_deep(limits.max_depth)) from None
        raise OpenAPIError(where, f"neither JSON nor YAML ({getattr(exc, 'problem', exc)}).") from None
