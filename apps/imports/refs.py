"""`$ref`s inside one JSON document, expanded into plain copies within bounds. Pure.

A reference is a JSON pointer into the same document (`#/components/schemas/Pet`, `#` for
the whole); an import never fetches what a document points to elsewhere. Expanding copies
the referenced value wherever it is used (other keys beside the `$ref` are merged over it,
as OpenAPI 3.1 and JSON Schema read them), so its cost is counted while copying, node by
node, and stops at the first node past the limit: a few kilobytes of references that use
each other twice per level would otherwise grow to gigabytes before anything could measure
them.

A reference that leads back into itself is a recursive schema: refused as such, or (with
`unroll`) copied that many levels deep and then cut to a schema any value satisfies, with a
note. JSON Schema's dynamic references (2020-12 `$dynamicRef` to a `$dynamicAnchor`, 2019-09
`$recursiveRef` to a `$recursiveAnchor`) lead to the enclosing schema that declares the
anchor, so they are recursion too. Values of `example`, `examples`, `default`, `enum`,
`const` and `x-` extensions are data: a `$ref` key inside them is copied as written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from apps.common import json_pointer

from .errors import DocumentProblem, Unsupported
from .limits import Clock, ImportLimitExceeded, ImportLimits, too_deep, too_many_nodes

# How often (in nodes copied) an expansion looks at the import's clock.
CLOCK_EVERY = 1_000
# Keywords whose values are data, not schemas or references (GitHub's SCIM examples hold
# members written `{"$ref": "https://..."}`).
_DATA = frozenset({"example", "examples", "default", "enum", "const"})
# Keywords whose values map names (of properties, media types, status codes...) to values:
# their keys are names, not keywords, so a property called "default" or "$ref" is a schema.
_NAMED = frozenset({
    "properties", "patternProperties", "dependentSchemas", "$defs", "definitions", "content", "encoding",
    "headers", "responses", "links", "callbacks", "schemas", "securitySchemes", "requestBodies",
})
_DYNAMIC = ("$dynamicRef", "$recursiveRef")


class RefError(DocumentProblem):
    """A `$ref` at `where` that does not lead to a value of the document."""


def pointer(parts: Any) -> str:
    """The JSON pointer (RFC 6901) of a path of keys and indexes."""
    return json_pointer.pointer(parts)


def _child(at: str, key: Any) -> str:
    return f"{at}/{json_pointer.escaped(key)}"


def _contains(outer: str, inner: str) -> bool:
    """Whether the value at pointer `outer` contains (or is) the value at pointer `inner`."""
    return inner == outer or inner.startswith(outer + "/")


@dataclass(frozen=True)
class _Place:
    """Where a value being copied is: `where` in the expanded value (named in refusals), `at`
    in the document it is read from, `trail` where each reference followed was written, and
    the dynamic anchors of the schemas it is inside, outermost first."""

    where: str
    at: str
    trail: tuple[str, ...]
    anchors: tuple[tuple[str, str], ...]  # (anchor, the pointer of the schema declaring it)

    def child(self, key: Any) -> _Place:
        return _Place(_child(self.where, key), _child(self.at, key), self.trail, self.anchors)

    def entering(self, target: str) -> _Place:
        """The place of a referenced value copied here from `target`."""
        return _Place(self.where, target, (*self.trail, self.at), self.anchors)

    def anchored(self, schema: dict[str, Any]) -> _Place:
        """This place inside `schema`, with the dynamic anchor it declares."""
        anchor = schema.get("$dynamicAnchor")
        if isinstance(anchor, str):
            return _Place(self.where, self.at, self.trail, (*self.anchors, (f"#{anchor}", self.at)))
        if schema.get("$recursiveAnchor") is True:
            return _Place(self.where, self.at, self.trail, (*self.anchors, ("#", self.at)))
        return self

    def dynamic_target(self, reference: str, keyword: str) -> str | None:
        """The pointer a dynamic reference leads to: the outermost enclosing schema declaring
        its anchor (the dynamic scope's first). None when none does: the reference is then
        read as a plain one."""
        wanted = "#" if keyword == "$recursiveRef" else reference
        return next((at for anchor, at in self.anchors if anchor == wanted), None)


class Expander:
    """Copies values of the document `root` with every `$ref` replaced by what it points to.

    One expander counts the nodes (objects, arrays, scalars) of everything it copies, so one
    is made per operation (or tool) to bound it as a whole. Raises RefError for a reference
    outside the document or to nothing, Unsupported for a recursive one when `unroll` is 0,
    ImportLimitExceeded past `limits` (the depth counts the pointer's parts, the document's
    own included)."""

    def __init__(self, root: Any, *, limits: ImportLimits, clock: Clock | None = None,
                 unroll: int = 0) -> None:
        self.root = root
        self.limits = limits
        self.clock = clock
        self.unroll = unroll
        self.nodes = 0
        self.unrolled = False  # whether it copied a recursive schema into itself

    def expand(self, value: Any, where: str) -> Any:
        """A copy of `value`, which sits at pointer `where` of the document, expanded."""
        return self._copy(value, _Place(where, where, (), ()), named=False)

    def _count(self, where: str) -> None:
        self.nodes += 1
        if self.nodes > self.limits.max_schema_nodes:
            raise ImportLimitExceeded(where, too_many_nodes(self.limits.max_schema_nodes))
        if self.clock is not None:
            self.clock.check(where, every=CLOCK_EVERY)

    def _copy(self, value: Any, place: _Place, *, named: bool) -> Any:
        self._count(place.where)
        if isinstance(value, list):
            self._check_depth(place.where)
            return [self._copy(item, place.child(index), named=False) for index, item in enumerate(value)]
        if not isinstance(value, dict):
            return value
        self._check_depth(place.where)
        if not named:
            if "$ref" in value:
                return self._follow(value, place, "$ref")
            if dynamic := next((k for k in _DYNAMIC if k in value), None):
                return self._follow(value, place, dynamic)
            return self._members(value, place.anchored(value))
        return {key: self._copy(item, place.child(key), named=False) for key, item in value.items()}

    def _members(self, value: dict[str, Any], place: _Place) -> dict[str, Any]:
        """A copy of the members of an object whose keys are keywords."""
        copied: dict[str, Any] = {}
        for key, item in value.items():
            if key in _DATA or key.startswith("x-"):
                copied[key] = self._data(item, place.child(key).where)
            else:
                copied[key] = self._copy(item, place.child(key), named=key in _NAMED)
        return copied

    def _data(self, value: Any, where: str) -> Any:
        """A copy of a value that is data: counted and bounded, its `$ref` keys kept."""
        self._count(where)
        if isinstance(value, dict):
            self._check_depth(where)
            return {key: self._data(item, _child(where, key)) for key, item in value.items()}
        if isinstance(value, list):
            self._check_depth(where)
            return [self._data(item, _child(where, index)) for index, item in enumerate(value)]
        return value

    def _check_depth(self, where: str) -> None:
        if where.count("/") >= self.limits.max_depth:
            raise ImportLimitExceeded(where, too_deep(self.limits.max_depth))

    def _follow(self, value: dict[str, Any], place: _Place, keyword: str) -> Any:
        reference = value[keyword]
        if not isinstance(reference, str):
            raise RefError(_child(place.where, keyword),
                           f"a {keyword} must be text (a JSON pointer such as '#/components/...').")
        target = self._target_of(reference, place.where) if keyword == "$ref" else \
            place.dynamic_target(reference, keyword)
        if target is None:
            anchor = "$recursiveAnchor" if keyword == "$recursiveRef" else "$dynamicAnchor"
            raise RefError(place.where, f"{keyword} {reference!r} cannot be resolved: no schema around it "
                           f"declares its {anchor}.")
        if self.unroll and not target:
            raise RefError(place.where, f"{keyword} {reference!r} refers to the whole document, no schema.")
        siblings = {k: v for k, v in value.items() if k != keyword}
        levels = sum(_contains(target, p) for p in (*place.trail, place.at))
        self.unrolled = self.unrolled or levels > 0
        if levels and levels >= self.unroll:
            if not self.unroll:
                raise Unsupported(
                    f"its schema is recursive ({place.where} refers to {reference!r}, which contains it); "
                    "ToolHub needs a finite schema."
                )
            # Deeper values are the upstream's to check: any value is accepted here.
            cut = {"description": f"Nested like {reference} again; ToolHub does not check values this deep."}
            return {**cut, **self._members(siblings, place)}
        found = self.lookup(target, reference, place.where)
        resolved = self._copy(found, place.entering(target), named=False)
        if siblings and isinstance(resolved, dict):
            resolved.update(self._members(siblings, place))
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
            key = json_pointer.unescaped(part)
            if isinstance(node, dict) and key in node:
                node = node[key]
            elif isinstance(node, list) and key.isdigit() and int(key) < len(node):
                node = node[int(key)]
            else:
                raise RefError(where, f"$ref {reference!r} cannot be resolved: the document has nothing "
                               f"at {target}.")
        return node
