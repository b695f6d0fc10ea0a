"""Fixtures of the catalog tests."""

from __future__ import annotations

import pytest

from tests.factories import ToolFactory


@pytest.fixture
def tool():
    return ToolFactory(name="search_orders")
