"""The admin's OpenAPI import runs in a task: the page shows its progress while it runs,
then its report, a failure in words, and the operations the API removed."""

from __future__ import annotations

import datetime

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.utils import timezone

from apps.catalog.models import ToolVersion, VersionStatus
from apps.imports import runs
from apps.imports.models import OpenAPIImportRun, RunStatus
from apps.imports.runs import openapi_import_run_execute
from apps.imports.tasks import openapi_import_task
from tests.admin.conftest import logged_in, staff_user
from tests.imports.big_documents import many_operations

PAGE = "/admin/imports/openapi/"


def _upload(document: bytes) -> SimpleUploadedFile:
    return SimpleUploadedFile("items.json", document, content_type="application/json")


@pytest.fixture
def queued(monkeypatch):
    """Runs the admin enqueues, kept for the test to run (no worker takes them)."""
    ids: list[int] = []
    monkeypatch.setattr(openapi_import_task, "delay", ids.append)
    return ids


def test_the_page_shows_the_progress_then_the_report(world, acme_staff, queued, monkeypatch):
    # given: an import started from the form
    started = acme_staff.post(PAGE, {"document": _upload(many_operations(3)), "upstream": "items"})
    assert started.status_code == 302
    run_page = started["Location"]

    # then: before a worker takes it, the page says so and reloads itself
    waiting = acme_staff.get(run_page).content.decode()
    assert "Waiting for a worker to start the import" in waiting
    assert '<meta http-equiv="refresh" content="2">' in waiting
    assert OpenAPIImportRun.objects.get(pk=queued[0]).document == many_operations(3)

    # when: the worker has done two operations of three
    pages: list[str] = []
    real_progress_writer = runs._progress_writer

    def looking_on(run_id):
        write = real_progress_writer(run_id)

        def write_and_look(done, total):
            write(done, total)
            if done == 2:
                pages.append(acme_staff.get(run_page).content.decode())
        return write_and_look

    monkeypatch.setattr(runs, "_progress_writer", looking_on)
    monkeypatch.setattr(runs, "_PROGRESS_EVERY_S", 0)
    openapi_import_task.apply(args=[queued[0]])

    # then: the page showed it, and shows the report once done
    assert "Importing: <strong>2 of 3</strong> operations done." in pages[0]
    assert '<progress max="3" value="2">' in pages[0]
    done = acme_staff.get(run_page)
    html = done.content.decode()
    assert done.status_code == 200 and "http-equiv" not in html
    assert html.count('class="import-new"') == 3 and "get_item2 v1</a> (draft)" in html
    assert OpenAPIImportRun.objects.get(pk=queued[0]).document is None  # freed once read


def test_a_task_that_fails_says_so_on_the_page(world, acme_staff, queued, monkeypatch):
    started = acme_staff.post(PAGE, {"document": _upload(many_operations(1)), "upstream": "items"})

    def broken(**kwargs):
        raise RuntimeError("the disk is full")
    monkeypatch.setattr(runs, "openapi_import", broken)
    openapi_import_task.apply(args=[queued[0]])

    page = acme_staff.get(started["Location"])
    assert page.status_code == 400
    assert "The import failed (RuntimeError); nothing was imported." in page.content.decode()
    assert "http-equiv" not in page.content.decode()
    assert not ToolVersion.objects.filter(source__upstream="items").exists()


def test_a_run_whose_worker_died_says_so_on_the_page(world, acme_staff, queued):
    started = acme_staff.post(PAGE, {"document": _upload(many_operations(1)), "upstream": "items"})
    long_ago = timezone.now() - datetime.timedelta(seconds=runs.RUN_TIME_LIMIT_S + 1)
    OpenAPIImportRun.objects.filter(pk=queued[0]).update(status=RunStatus.RUNNING, updated_at=long_ago)

    page = acme_staff.get(started["Location"]).content.decode()

    assert "The worker running this import stopped" in page and "http-equiv" not in page


def test_a_document_over_the_limit_is_refused_by_the_form_naming_the_setting(world, acme_staff, settings):
    settings.TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES = 1_000

    page = acme_staff.post(PAGE, {"document": _upload(many_operations(20)), "upstream": "items"})

    said = "larger than the 1000 bytes an import reads (TOOLHUB_IMPORT_MAX_DOCUMENT_BYTES)"
    assert said in page.content.decode()
    assert not OpenAPIImportRun.objects.exists()


@pytest.mark.usefixtures("imports_in_process")
def test_a_reimport_lists_removed_operations_and_the_button_deprecates_their_tools(world, acme_staff):
    acme_staff.post(PAGE, {"document": _upload(many_operations(2)), "upstream": "items"})
    removed = ToolVersion.objects.select_related("tool").get(tool__name="get_item1")
    removed.status, removed.published_at = VersionStatus.PUBLISHED, timezone.now()
    removed.save()

    page = acme_staff.post(PAGE, {"document": _upload(many_operations(2, without=(1,))), "upstream": "items"},
                           follow=True)

    html = page.content.decode()
    assert "No longer in the document" in html
    assert "<td><code>getItem1</code></td><td>get_item1</td><td>1</td>" in html
    run_page = page.redirect_chain[-1][0]

    deprecated = acme_staff.post(run_page).content.decode()

    assert "Deprecated: get_item1 v1." in deprecated
    assert ToolVersion.objects.get(pk=removed.pk).status == VersionStatus.DEPRECATED


def test_staff_of_another_tenant_do_not_see_a_run(world, acme_staff, queued):
    started = acme_staff.post(PAGE, {"document": _upload(many_operations(1)), "upstream": "items"})
    globex_staff = logged_in(staff_user("globex-staff", tenant=world.globex.tenant))

    assert globex_staff.get(started["Location"]).status_code == 404
    assert openapi_import_run_execute(run_id=queued[0]) == RunStatus.DONE
