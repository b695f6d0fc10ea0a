"""What the run prints: per document its counts and every failure, then one table."""

from __future__ import annotations

from collections.abc import Callable, Iterable

from .harness import DocumentResult

# The kinds of failure, in the order they are listed.
KINDS = ("refused", "crash", "skipped", "lint-blocked", "not-generated", "invoke-error", "invalid")


def percent(part: int, whole: int) -> float:
    return 100.0 * part / whole if whole else 100.0


def headline(result: DocumentResult) -> str:
    return (f"{result.name}: operations imported {result.imported}/{result.operations}, "
            f"requests valid {result.valid}/{result.sent}"
            + (f", {result.lint_blocked} lint-blocked (published anyway)" if result.lint_blocked else ""))


def failure_lines(result: DocumentResult) -> list[str]:
    ordered = sorted(result.failures, key=lambda f: (KINDS.index(f.kind), f.where))
    return [f"  {f.kind}: {f.where}: {f.message}".replace("\n", "\n    ") for f in ordered]


COLUMNS: tuple[tuple[str, Callable[[DocumentResult], str]], ...] = (
    ("document", lambda r: r.name),
    ("imported", lambda r: f"{r.imported}/{r.operations}"),
    ("%", lambda r: f"{percent(r.imported, r.operations):.1f}"),
    ("lint-blocked", lambda r: str(r.lint_blocked)),
    ("not generated", lambda r: str(r.count("not-generated"))),
    ("valid/sent", lambda r: f"{r.valid}/{r.sent}"),
    ("% valid", lambda r: f"{percent(r.valid, r.sent):.1f}"),
    ("invoke errors", lambda r: str(r.count("invoke-error"))),
    ("seconds", lambda r: f"{sum(r.seconds.values()):.0f}"),
)


def table(results: Iterable[DocumentResult]) -> str:
    rows = [[title for title, _ in COLUMNS]]
    rows += [[cell(r) for _, cell in COLUMNS] for r in results]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    lines = ["  ".join(cell.ljust(width) if i == 0 else cell.rjust(width)
                       for i, (cell, width) in enumerate(zip(row, widths, strict=True)))
             for row in rows]
    return "\n".join([lines[0], "  ".join("-" * w for w in widths), *lines[1:]])
