"""Tool versions as the Python signatures code mode lists (apps/catalog/python_signatures.py)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from apps.catalog.python_signatures import docstring, python_signature, python_type


def version(parameters: dict[str, Any], *, description: str = "Does it. More words.", bound: Any = ()) -> Any:
    return SimpleNamespace(
        tool_name="do_it",
        number=1,
        description=description,
        parameters=parameters,
        context_bindings={name: {} for name in bound},
        side_effect="readonly",
        output_schema={},
        annotations={},
    )


def test_types_read_as_python():
    assert python_type({"type": "string", "enum": ["a", "b"]}) == 'Literal["a", "b"]'
    assert python_type({"type": ["integer", "null"]}) == "int | None"
    assert python_type({"type": "array", "items": {"type": "number"}}) == "list[float]"
    assert python_type({"anyOf": [{"type": "null"}, {"type": "boolean"}]}) == "bool | None"
    assert python_type({"type": "object"}) == "dict"
    assert python_type({}) == "Any"


def test_required_first_keyword_only_optional_with_defaults_bound_fields_left_out():
    text = python_signature(
        version(
            {
                "type": "object",
                "properties": {
                    "limit": {"type": "integer", "default": 20},
                    "user_id": {"type": "string"},
                    "since": {"type": "string", "format": "date"},
                    "note": {"type": "string"},
                },
                "required": ["user_id", "since"],
            },
            bound=["user_id"],
        )
    )

    assert text.splitlines() == [
        "def do_it(*, since: str, limit: int = 20, note: str | None = None) -> Any:",
        '    """Does it."""',
        "    # formats: since: date (ISO 8601)",
    ]


def test_a_tool_without_parameters():
    assert python_signature(version({"type": "object", "properties": {}})).startswith("def do_it(*) -> Any:")


def test_docstrings_are_one_safe_line():
    assert docstring("First line\nwraps here. Second.") == "First line wraps here."
    assert docstring('Quotes """ and \\ stay inside.') == "Quotes ''' and \\\\ stay inside."
    assert len(docstring("x" * 500)) == 160
