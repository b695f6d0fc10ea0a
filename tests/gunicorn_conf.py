"""gunicorn.conf.py read as a module, for tests of what a worker does when it starts."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType

CONF = Path(__file__).resolve().parents[1] / "gunicorn.conf.py"


def gunicorn_conf() -> ModuleType:
    """gunicorn.conf.py executed afresh (it reads the environment at import)."""
    spec = importlib.util.spec_from_file_location("gunicorn_conf", CONF)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
