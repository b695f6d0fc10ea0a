"""The targets table that ends `make bench`: verdicts from one run's loads."""

from __future__ import annotations

from bench.first_call import FirstCall
from bench.load import Load
from bench.mcp import McpFigures
from bench.report import Report
from bench.targets import verdict_lines, verdicts


def _load(rps: float, *, cpu_ms: float = 1.0, p50_ms: float = 10.0, p99_ms: float = 20.0) -> Load:
    return Load(rps=rps, p50_ms=p50_ms, p99_ms=p99_ms, requests=1000, app_cpu_s=cpu_ms)


def _report(**loads: Load) -> Report:
    mcp_keys = {"mcp_direct", "mcp_federated", "rest_own", "mcp_own"}
    report = Report(load_average={"start": "0", "end": "0"})
    report.loads = {key: load for key, load in loads.items() if key not in mcp_keys}
    mcp = {key: load for key, load in loads.items() if key in mcp_keys}
    report.mcp = McpFigures(loads=mcp) if mcp else None
    return report


def test_every_target_of_a_full_run_gets_a_verdict_from_its_figures():
    report = _report(
        bare_imported=_load(1000, cpu_ms=1.0), governed_imported=_load(750, cpu_ms=1.4),
        mcp_imported=_load(700, cpu_ms=1.6, p99_ms=40.0),
        mcp_direct=_load(1000, cpu_ms=1.0), mcp_federated=_load(400, cpu_ms=2.5),
        bare_cancel=_load(500), governed_cancel=_load(320),
    )
    report.first_call = FirstCall(first_ms=(25.0, 30.0, 35.0), warm_ms=(9.0, 10.0, 11.0))

    by_figure = {v.figure.split(":")[0]: v.word for v in verdicts(report)}

    assert by_figure == {
        "governed readonly http call": "NOT MET",  # /mcp at 1.6 ms
        "governed call / bare Django view, same upstream (req/s)": "met",  # 0.75
        "federated MCP call / the MCP server direct (req/s)": "NOT MET",  # 0.40
        "federated MCP call": "met",  # +1.5 ms
        "/mcp and REST p99 at 8 connections, over the turns": "NOT MET",  # 40 ms against 10
        "write (intent + commit) / bare DRF write (req/s)": "met",  # 0.64
        "first federated call of a fresh worker": "NOT MET",  # 3 x
    }
    assert verdict_lines(report)[-1] == "targets met: 3 of 7 measured (7 in all)"


def test_a_target_whose_loads_did_not_run_is_not_measured_never_met():
    report = _report(mcp_direct=_load(1000), mcp_federated=_load(600, cpu_ms=2.0))

    words = [v.word for v in verdicts(report)]

    assert words.count("not measured") == 5
    assert verdict_lines(report)[-1] == "targets met: 2 of 2 measured (7 in all)"
