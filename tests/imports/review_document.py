"""A small notes API of our own: five operations whose descriptions never say when not to use
them, three of them writes (one a POST search), one with an undescribed field. Shared by the
import review tests."""

from __future__ import annotations

import json
from pathlib import Path

_TEXT = {"type": "string", "description": "Words of the note."}


def _operation(operation_id: str, summary: str, **extra) -> dict:
    return {"operationId": operation_id, "summary": summary, "responses": {"200": {"description": "OK."}},
            **extra}


def _body(**more: dict) -> dict:
    return {"required": True, "content": {"application/json": {"schema": {
        "type": "object", "properties": {"text": _TEXT, **more}, "required": ["text"]}}}}


NOTES = {
    "openapi": "3.0.3",
    "info": {"title": "Notes", "version": "1"},
    "servers": [{"url": "https://notes.example.com"}],
    "paths": {
        "/notes": {
            "get": _operation("listNotes", "Lists notes, at most 50."),
            "post": _operation("createNote", "Creates a note, one at a time.",
                               requestBody=_body(tag={"type": "string"})),
        },
        "/notes/search": {"post": _operation("searchNotes", "Search notes by words, at most 20.",
                                             requestBody=_body())},
        "/notes/{note}": {
            "parameters": [{"name": "note", "in": "path", "required": True,
                            "schema": {"type": "string"}, "description": "The note's key."}],
            "get": _operation("getNote", "Gets one note."),
            "delete": _operation("deleteNote", "Deletes one note."),
        },
    },
}


def notes_file(folder: Path) -> Path:
    path = folder / "notes.json"
    path.write_text(json.dumps(NOTES))
    return path
