"""The import pages' review of an import's findings (apps/imports/review.py) in templates:
`{% import_review report.results as review %}`, then `result|own_findings:review`."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django import template

from apps.catalog.lint import Finding
from apps.imports.review import ImportReview
from apps.imports.review import import_review as review_of

register = template.Library()


@register.simple_tag
def import_review(results: Iterable[Any]) -> ImportReview:
    return review_of(results)


@register.filter
def own_findings(result: Any, review: ImportReview) -> list[Finding]:
    return review.own(result)
