"""The files settings are read from besides the environment: `.env` in the checkout, and the
`run.env` that `make run` (scripts/run.sh) writes under the var directory at each start.

run.env holds what `make run` derived for its processes (the egress allowance of the demo's
loopback ports, the shared file cache, the ports, the var directory), so a `manage.py`
command in another shell sees the configuration the running server sees without anyone
exporting anything. It ranks above .env, which it was derived from, and below the
environment. TOOLHUB_RUN_ENV names another file; empty reads none (the test settings).
"""

from __future__ import annotations

import os
from pathlib import Path

import environ

RUN_ENV_NAME = "run.env"


def env_file_values(path: Path) -> dict[str, str]:
    """The values of a .env-style file, without putting them in the environment; none when
    the file is missing."""
    if not path.is_file():
        return {}

    class _Values(environ.Env):
        ENVIRON: dict[str, str] = {}  # noqa: RUF012 - read_env fills this class's own mapping

    _Values.read_env(path, overwrite=True)
    return dict(_Values.ENVIRON)


def load_env_files(base_dir: Path) -> None:
    """Put into os.environ, where it has no value yet, what run.env says, then what .env says."""
    dot_env = env_file_values(base_dir / ".env")
    run_env_path = os.environ.get("TOOLHUB_RUN_ENV", dot_env.get("TOOLHUB_RUN_ENV"))
    if run_env_path is None:
        var_dir = os.environ.get("TOOLHUB_VAR_DIR") or dot_env.get("TOOLHUB_VAR_DIR") or str(base_dir / "var")
        run_env_path = str(Path(var_dir) / RUN_ENV_NAME)
    values = {**dot_env, **(env_file_values(Path(run_env_path)) if run_env_path else {})}
    for name, value in values.items():
        os.environ.setdefault(name, value)
