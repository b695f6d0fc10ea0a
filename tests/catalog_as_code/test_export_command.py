"""`catalog_export --out`: where the README writes it (catalog/demo.yaml) works from a fresh
checkout, and a path that cannot be written is an operator's error, not a traceback."""

from __future__ import annotations

import io

import pytest
import yaml
from django.core.management import CommandError, call_command

from tests.factories import TenantFactory

pytestmark = pytest.mark.django_db


def test_out_in_a_directory_that_does_not_exist_yet_makes_it(tmp_path):
    # Given a tenant, and no catalog/ directory
    TenantFactory(slug="notes")
    out = tmp_path / "catalog" / "notes.yaml"

    # When it is exported there
    call_command("catalog_export", "--tenant", "notes", "--out", str(out), stderr=io.StringIO())

    # Then the directory is made and the file holds the tenant's catalog
    assert yaml.safe_load(out.read_text())["tenant"] == "notes"


def test_out_naming_a_directory_says_to_name_a_file(tmp_path):
    TenantFactory(slug="notes")

    with pytest.raises(CommandError) as refused:
        call_command("catalog_export", "--tenant", "notes", "--out", str(tmp_path))

    assert str(refused.value) == (
        f"--out {tmp_path} is a directory: name a file, e.g. --out {tmp_path / 'notes.yaml'}."
    )


def test_out_under_a_file_says_why_it_cannot_be_written(tmp_path):
    TenantFactory(slug="notes")
    (tmp_path / "catalog").write_text("a file, not a directory")

    with pytest.raises(CommandError) as refused:
        call_command("catalog_export", "--tenant", "notes", "--out", str(tmp_path / "catalog" / "notes.yaml"))

    assert str(refused.value).startswith(f"Cannot write {tmp_path / 'catalog' / 'notes.yaml'}: ")
