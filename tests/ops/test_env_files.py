"""Where settings come from besides the environment: run.env (what `make run` derived) above
.env, below the environment; none of it for the tests."""

from __future__ import annotations

import os

import pytest

from toolhub.settings.env_files import load_env_files


@pytest.fixture
def clean_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("TOOLHUB_RUN_ENV", "TOOLHUB_VAR_DIR", "TOOLHUB_EGRESS_ALLOW", "TOOLHUB_PORT", "CACHE_URL"):
        monkeypatch.delenv(name, raising=False)
    # load_env_files writes os.environ: give monkeypatch a copy to restore
    monkeypatch.setattr(os, "environ", os.environ.copy())


def test_run_env_ranks_above_dot_env_and_below_the_environment(tmp_path, clean_environ):
    # Given a checkout whose .env allows one host, and the run.env make run derived from it
    (tmp_path / ".env").write_text("TOOLHUB_EGRESS_ALLOW=api.corp.example\nTOOLHUB_PORT=9000\n")
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "run.env").write_text(
        "TOOLHUB_EGRESS_ALLOW=api.corp.example,127.0.0.1:8000,127.0.0.1:8001\n"
        "TOOLHUB_PORT=8000\nCACHE_URL=filecache:///tmp/var/cache\n"
    )
    os.environ["TOOLHUB_PORT"] = "8100"

    # When the settings' files are read
    load_env_files(tmp_path)

    # Then make run's derived values beat .env's, and the environment beats both
    assert os.environ["TOOLHUB_EGRESS_ALLOW"] == "api.corp.example,127.0.0.1:8000,127.0.0.1:8001"
    assert os.environ["CACHE_URL"] == "filecache:///tmp/var/cache"
    assert os.environ["TOOLHUB_PORT"] == "8100"


def test_run_env_is_found_in_the_var_dir_dot_env_names(tmp_path, clean_environ):
    # Given a .env that moves the var dir, where make run wrote its run.env
    moved = tmp_path / "elsewhere"
    moved.mkdir()
    (moved / "run.env").write_text("TOOLHUB_PORT=8200\n")
    (tmp_path / ".env").write_text(f"TOOLHUB_VAR_DIR={moved}\n")

    # When the settings' files are read
    load_env_files(tmp_path)

    # Then that run.env is read
    assert os.environ["TOOLHUB_PORT"] == "8200"


def test_an_empty_toolhub_run_env_reads_no_run_env(tmp_path, clean_environ):
    # Given a developer's run.env, and TOOLHUB_RUN_ENV empty (as the test settings set it)
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / "run.env").write_text("TOOLHUB_PORT=8000\n")
    os.environ["TOOLHUB_RUN_ENV"] = ""

    # When the settings' files are read
    load_env_files(tmp_path)

    # Then nothing of it is in the environment
    assert "TOOLHUB_PORT" not in os.environ


def test_the_test_settings_read_no_run_env():
    # The test run's own settings module set it before the base settings were read
    assert os.environ["TOOLHUB_RUN_ENV"] == ""
