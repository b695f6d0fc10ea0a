"""`make conformance [ARGS="--docs DIR --only stripe --min 98"]`: every OpenAPI document of a
folder imported, called tool by tool, and checked on the wire (docs/conformance.md).

Exits 1 when ToolHub crashed (a traceback) on any document, or, with `--min`, when a
document imported or sent valid less than that percentage; 0 otherwise, whatever the
counts: the table is the result."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
DEFAULT_DOCS = REPO.parent / "shared" / "realworld" / "openapi"
SUFFIXES = (".json", ".yaml", ".yml")


def arguments(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="make conformance", description=__doc__.splitlines()[0])
    parser.add_argument("--docs", type=Path, default=DEFAULT_DOCS,
                        help=f"The folder of OpenAPI documents (default: {DEFAULT_DOCS}).")
    parser.add_argument("--only", action="append", default=[],
                        help="Only documents whose file name contains this (repeatable).")
    parser.add_argument("--seed", type=int, default=20, help="The arguments' seed (default 20).")
    parser.add_argument("--budget", type=float, default=2.0,
                        help="Seconds to generate one tool's arguments (default 2).")
    parser.add_argument("--min", type=float, default=None,
                        help="Exit 1 when a document's imported or valid percentage is below this.")
    return parser.parse_args(argv)


def documents(folder: Path, only: Sequence[str]) -> list[Path]:
    found = sorted(p for p in folder.iterdir() if p.suffix in SUFFIXES and p.is_file())
    return [p for p in found if not only or any(word in p.name for word in only)]


def main(argv: Sequence[str] | None = None) -> int:
    options = arguments(argv)
    if not options.docs.is_dir():
        print(f"No folder {options.docs}: nothing to run.", file=sys.stderr)
        return 2
    paths = documents(options.docs, options.only)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "conformance.settings")
    import django

    django.setup()
    # Each call's access and httpx lines would bury the report; warnings still show.
    logging.disable(logging.INFO)
    from django.db import connection

    from .harness import RunOptions, run_document
    from .report import failure_lines, headline, percent, table
    from .upstream import validating_upstream

    # A stop (SIGTERM from CI's timeout, `kill`) still drops the database, as Ctrl-C does.
    signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(128 + signum))
    name = connection.settings_dict["NAME"]
    print(f"Conformance database {connection.settings_dict['TEST']['NAME']}: made now, dropped at the end.")
    connection.creation.create_test_db(verbosity=0, autoclobber=True, serialize=False)
    results = []
    try:
        with validating_upstream() as upstream:
            for number, path in enumerate(paths, start=1):
                print(f"[{number}/{len(paths)}] {path.name} …", flush=True)
                started = time.monotonic()
                result = run_document(path, upstream, RunOptions(seed=options.seed, budget_s=options.budget),
                                      slug=f"conformance-{number}")
                results.append(result)
                spent = ", ".join(f"{step} {seconds:.0f} s" for step, seconds in result.seconds.items())
                print(f"{headline(result)} ({time.monotonic() - started:.0f} s: {spent})", flush=True)
                for line in failure_lines(result):
                    print(line)
    finally:
        connection.creation.destroy_test_db(name, verbosity=0)
    print()
    print(table(results))
    crashed = [r.name for r in results if r.count("crash")]
    if crashed:
        print(f"\nToolHub crashed on {', '.join(crashed)}: see the tracebacks above.")
        return 1
    below = [r.name for r in results if options.min is not None
             and min(percent(r.imported, r.operations), percent(r.valid, r.sent)) < options.min]
    if below:
        print(f"\nBelow {options.min:g} %: {', '.join(below)}.")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
