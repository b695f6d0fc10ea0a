"""The text summary of a py-spy recording (`make profile`)."""

from __future__ import annotations

from bench.flame import library, summary

ROOT = "run (gunicorn/workers/gthread.py:1);WSGIHandler.__call__ (django/core/handlers/wsgi.py:2)"
RAW = f"""\
{ROOT};post (apps/gateway/api/views.py:3);validate (jsonschema/validators.py:4) 30
{ROOT};post (apps/gateway/api/views.py:3);execute (psycopg/cursor.py:5) 40
{ROOT};render (rest_framework/renderers.py:6);dumps (json/__init__.py:7) 10
run (gunicorn/workers/gthread.py:1);murder_keepalived (gunicorn/workers/gthread.py:9) 20
"""


def test_a_recording_is_summed_by_the_leaf_frames_library_and_by_the_widest_functions(tmp_path):
    raw = tmp_path / "flame.txt"
    raw.write_text(RAW)

    lines = summary(raw)

    assert lines[0].startswith("  100 samples, 80% in requests")
    assert lines[1:5] == [f"    {'psycopg':<28}{'40%':>6}", f"    {'jsonschema':<28}{'30%':>6}",
                          f"    {'gunicorn':<28}{'20%':>6}", f"    {'stdlib':<28}{'10%':>6}"]
    # The WSGI handler is on every request's samples: no cost of its own to read.
    assert lines[6] == "      70%  post (apps/gateway/api/views.py)"
    assert not any("wsgi" in line for line in lines[6:])


def test_frames_of_toolhub_are_named_by_app():
    assert library("apps/gateway/executors/http/executor.py") == "apps/gateway"
    assert library("django/db/backends/utils.py") == "django"
    assert library("threading.py") == "stdlib"
