"""The shape of the code that lint-imports' layer contracts do not see: no import circle
anywhere in apps/ (a circle inside one layer of a contract is still a circle), and no module
a newcomer cannot hold in their head (docs/architecture.md, style.md: split past ~400 lines).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent
MAX_MODULE_LINES = 400
# What we write and run; migrations are generated, tests are measured by their own habits.
SOURCE_FOLDERS = ("apps", "toolhub", "bench", "soak", "conformance", "scripts")


def _circles(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iteratively)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    on_stack: set[str] = set()
    stack: list[str] = []
    circles: list[list[str]] = []

    def successors(module: str) -> Iterator[str]:
        return iter(sorted(graph.find_modules_directly_imported_by(module)))

    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, successors(root))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            module, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, successors(child)))
                elif child in on_stack:
                    low[module] = min(low[module], index[child])
                continue
            work.pop()
            if work:
                parent = work[-1][0]
                low[parent] = min(low[parent], low[module])
            if low[module] == index[module]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == module:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


def test_no_module_of_apps_imports_itself_back_through_others():
    # Imports inside functions count: a lazy import hides a circle from Python, not from a reader.
    graph = grimp.build_graph("apps", cache_dir=None)

    circles = _circles(graph)

    assert circles == [], "import circles in apps/: " + "; ".join(" <-> ".join(c) for c in circles)


def test_the_circle_finder_finds_a_circle():
    graph = grimp.ImportGraph()
    for module in ("pkg.a", "pkg.b", "pkg.c", "pkg.d"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.c")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg.d")

    assert _circles(graph) == [["pkg.a", "pkg.b", "pkg.c"]]


def test_no_module_is_longer_than_a_newcomer_can_hold_in_their_head():
    too_long = {
        str(path.relative_to(ROOT)): lines
        for folder in SOURCE_FOLDERS
        for path in (ROOT / folder).rglob("*.py")
        if "migrations" not in path.parts
        and (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    }

    assert too_long == {}, f"split these along their jobs (at most {MAX_MODULE_LINES} lines): {too_long}"


def test_other_apps_use_the_gateways_public_faces_not_its_executors_or_stages():
    # outbound.py and callables.py exist so that executors can change shape freely.
    graph = grimp.build_graph("apps", cache_dir=None)
    inner = ("apps.gateway.executors", "apps.gateway.pipeline")

    reaching_in = sorted(
        f"{importer} -> {imported}"
        for package in inner
        for imported in {package} | graph.find_descendants(package)
        for importer in graph.find_modules_that_directly_import(imported)
        if not importer.startswith("apps.gateway.")
    )

    assert reaching_in == []
