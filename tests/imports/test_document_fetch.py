"""Fetching an OpenAPI document by URL goes through the same answer limit as every executor:
a document past TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES is refused, naming the limit."""

from __future__ import annotations

import pytest

from apps.imports.errors import ImportRefused
from apps.imports.fetch import document_fetch
from tests.http_upstream import Answer, http_upstream


def test_a_document_past_the_answer_limit_is_refused_naming_it(settings):
    # given: a limit below the document's size
    settings.TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES = 1000
    with http_upstream() as docs:
        docs.answer = lambda received: Answer(body={"openapi": "3.1.0", "info": {"title": "x" * 5000}})

        # when
        with pytest.raises(ImportRefused) as refused:
            document_fetch(url=docs.url + "/openapi.json")

    # then
    assert "larger than 1000 bytes (TOOLHUB_UPSTREAM_MAX_RESPONSE_BYTES)" in str(refused.value)
