"""`$ref`s inside one JSON document, expanded into plain copies within bounds. Pure.

A reference is a JSON pointer into the same document (`#/components/schemas/Pet`, `#` for
the whole); an import never fetches what a document points to elsewhere. Expanding copies
the referenced value wherever it is used (other keys beside the `$ref` are merged over it,
as OpenAPI 3.1 and JSON Schema read them), so its cost is counted while copying, node by
node, and stops at the first node past the limit: a few kilobytes of references that use
each other twice per level would otherwise grow to gigabytes before anything could measure
them. A reference that leads back into itself is a recursive schema, refused as such.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import unquote

from .errors import DocumentProblem, Unsupported
from .limits import Clock, ImportLimitExceeded, ImportLimits, too_deep, too_many_nodes

# How often (in nodes copied) an expansion looks at the import's clock.
CLOCK_EVERY = 1_000


class RefError(DocumentProblem):
    """A `$ref` at `where` that does not lead to a value of the document."""


def pointer(parts: Any) -> str:
    """The JSON pointer (RFC 6901) of a path of keys and indexes."""
    return "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)


def _child(at: str, key: Any) -> str:
    return f"{at}/{str(key).replace('~', '~0').replace('/', '~1')}"


def _contains(outer: str, inner: str) -> bool:
    """Whether the value at pointer `outer` contains (or is) the value at pointer `inner`."""
    return inner == outer or inner.startswith(outer + "/")


class Expander:
    """Copies values of the document `root` with every `$ref` replaced by what it points to.

    One expander counts the nodes (objects, arrays, scalars) of everything it copies, so one
    is made per operation (or tool) to bound it as a whole. Raises RefError for a reference
    outside the document or to nothing, Unsupported for a recursive one, ImportLimitExceeded
    past `limits` (the depth counts the pointer's parts, the document's own included)."""

    def __init__(self, root: Any, *, limits: ImportLimits, clock: Clock | None = None) -> None:
        self.root = root
        self.limits = limits
        self.clock = clock
        self.nodes = 0

    def expand(self, value: Any, where: str) -> Any:
        """A copy of `value`, which sits at pointer `where` of the document, expanded."""
        return self._copy(value, where, where, ())

    def _copy(self, value: Any, where: str, at: str, trail: tuple[str, ...]) -> Any:
        # `where`: the place in the expanded value, named in refusals; `at`: the place in the
        # document the value was read from; `trail`: where each reference followed was written.
        self.nodes += 1
        if self.nodes > self.limits.max_schema_nodes:
            raise ImportLimitExceeded(where, too_many_nodes(self.limits.max_schema_nodes))
        if self.clock is not None:
            self.clock.check(where, every=CLOCK_EVERY)
        if isinstance(value, dict):
            self._check_depth(where)
            if "$ref" in value:
                return self._follow(value, where, at, trail)
            copied: dict[str, Any] = {}
            for key, item in value.items():
                copied[key] = self._copy(item, _child(where, key), _child(at, key), trail)
            return copied
        if isinstance(value, list):
            self._check_depth(where)
            items = []
            for index, item in enumerate(value):
                items.append(self._copy(item, _child(where, index), _child(at, index), trail))
            return items
        return value

    def _check_depth(self, where: str) -> None:
        if where.count("/") >= self.limits.max_depth:
            raise ImportLimitExceeded(where, too_deep(self.limits.max_depth))

    def _follow(self, value: dict[str, Any], where: str, at: str, trail: tuple[str, ...]) -> Any:
        reference = value["$ref"]
        if not isinstance(reference, str):
            raise RefError(_child(where, "$ref"),
                           "a $ref must be text (a JSON pointer such as '#/components/...').")
        target = self._target_of(reference, where)
        if any(_contains(target, place) for place in (*trail, at)):
            raise Unsupported(
                f"its schema is recursive ({where} refers to {reference!r}, which contains it); "
                "ToolHub needs a finite schema."
            )
        resolved = self._copy(self.lookup(target, reference, where), where, target, (*trail, at))
        siblings = {k: v for k, v in value.items() if k != "$ref"}
        if not siblings or not isinstance(resolved, dict):
            return resolved
        for key, item in siblings.items():
            resolved[key] = self._copy(item, _child(where, key), _child(at, key), trail)
        return resolved

    @staticmethod
    def _target_of(reference: str, where: str) -> str:
        if not reference.startswith("#"):
            raise RefError(
                where, f"$ref to {reference.split('#')[0]!r} points outside the document; an import "
                "reads one document only: bundle the referenced files into it."
            )
        fragment = unquote(reference[1:])
        if fragment and not fragment.startswith("/"):
            raise RefError(where, f"$ref {reference!r} cannot be resolved: ToolHub follows JSON pointers "
                           "('#/components/...') only.")
        return fragment

    def lookup(self, target: str, reference: str, where: str) -> Any:
        """The value at the pointer `target` of the document; RefError naming `where` if none."""
        node = self.root
        for part in target.split("/")[1:] if target else ():
            key = part.replace("~1", "/").replace("~0", "~")
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise RefError(where, f"$ref {reference!r} cannot be resolved: the document has nothing "
                               f"at {target}.")
        return node
