"""The JSON parser of every DRF endpoint: DRF's own, with a limit on nesting.

Python's json decoder recurses once per level, so a body of ten thousand `[` answered 500
(RecursionError) before this limit; and a body just shallow enough to decode could still
exhaust the stack in a serializer further down. Nothing the API takes is nested deeper
than a few levels around tool arguments, which stop at 32 (pipeline/parse.py).

Integers too long for Python to convert are kept as markers (apps/common/jsontext.py), not
refused here: inside one call's arguments they refuse that call and no other; anywhere else
the serializers refuse them as the value of a field.
"""

from __future__ import annotations

import codecs
import json
from typing import Any

from django.conf import settings
from rest_framework import parsers
from rest_framework.exceptions import ParseError

from . import jsontext
from .errors import ErrorDetail, InvalidArgsError

MAX_BODY_DEPTH = 64


def nested_deeper_than(value: Any, limit: int) -> bool:
    """Whether any object or array in `value` sits more than `limit` levels deep.

    Level by level, without recursion, looking only at containers: a megabyte of scalars
    costs one pass over a list.
    """
    level = [value] if isinstance(value, dict | list) else []
    depth = 0
    while level:
        depth += 1
        if depth > limit:
            return True
        level = [
            child
            for node in level
            for child in (node.values() if isinstance(node, dict) else node)
            if isinstance(child, dict | list)
        ]
    return False


def too_deep_error(limit: int = MAX_BODY_DEPTH) -> InvalidArgsError:
    return InvalidArgsError(
        f"The request body is nested deeper than {limit} levels.",
        hint="Send the request as the API reference at /api/docs/ shows it; tool arguments may "
        "nest at most 32 levels.",
        details=[ErrorDetail(path="/", problem=f"nesting deeper than {limit} levels")],
        http_status=400,
    )


def _reject_constant(token: str) -> Any:
    raise ParseError(f"{token} is not a JSON number.")


class JSONParser(parsers.JSONParser):
    def parse(self, stream: Any, media_type: str | None = None, parser_context: Any = None) -> Any:
        encoding = (parser_context or {}).get("encoding", settings.DEFAULT_CHARSET)
        try:
            data = jsontext.loads(codecs.getreader(encoding)(stream).read(), parse_constant=_reject_constant)
        except UnicodeDecodeError as exc:
            where = f"byte 0x{exc.object[exc.start]:02x} at offset {exc.start}"
            raise ParseError(f"it is not {encoding.upper()} text ({where}).") from None
        except json.JSONDecodeError as exc:
            where = f"line {exc.lineno}, column {exc.colno} (char {exc.pos})"
            raise ParseError(f"{exc.msg} at {where}.") from None
        except RecursionError:
            raise too_deep_error() from None
        if nested_deeper_than(data, MAX_BODY_DEPTH):
            raise too_deep_error()
        return data
