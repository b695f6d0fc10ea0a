"""The targets of "governance at the cost of a bare Django view", judged on one run's figures.

Each figure is measured against its baseline in the same run (the bare view, the MCP server
direct, a warm call), so the verdict does not move with the machine's other load as much as
an absolute figure would. A target whose loads this run did not make (`--mcp` alone, say) is
printed as not measured, never as met.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .load import Load

if TYPE_CHECKING:
    from .first_call import FirstCall
    from .report import Report

# The most server CPU (gunicorn + PostgreSQL) a governed readonly http call may cost, in ms.
HTTP_CALL_CPU_MS = 1.5
GOVERNED_OVER_BARE = 0.7
FEDERATED_OVER_DIRECT = 0.5
FEDERATED_EXTRA_CPU_MS = 2.0
P99_OVER_P50 = 3.0
WRITE_OVER_BARE = 0.6
FIRST_CALL_OVER_WARM = 2.0
# The loads of REST invoke and /mcp whose tail is judged, by report key.
TAIL_LOADS = {
    "governed_search": "REST search_orders",
    "governed_imported": "REST list_order_refunds",
    "mcp_imported": "/mcp list_order_refunds",
    "rest_own": "REST search_orders (MCP part)",
    "mcp_own": "/mcp search_orders",
}


@dataclass(frozen=True)
class Verdict:
    figure: str
    measured: str  # what this run measured, against its baseline
    before: str  # the figure before the work
    target: str
    met: bool | None  # None: not measured in this run

    @property
    def word(self) -> str:
        return "not measured" if self.met is None else ("met" if self.met else "NOT MET")


def verdicts(report: Report) -> list[Verdict]:
    loads: dict[str, Load] = dict(report.loads)
    if report.mcp is not None:
        loads.update(report.mcp.loads)
    return [
        _http_cpu(loads),
        _ratio(loads, "governed call / bare Django view, same upstream (req/s)", "governed_imported",
               "bare_imported", "0.47", GOVERNED_OVER_BARE),
        _ratio(loads, "federated MCP call / the MCP server direct (req/s)", "mcp_federated", "mcp_direct",
               "0.17-0.21", FEDERATED_OVER_DIRECT),
        _federated_cpu(loads),
        _tail(loads),
        _ratio(loads, "write (intent + commit) / bare DRF write (req/s)", "governed_cancel", "bare_cancel",
               "0.41-0.47", WRITE_OVER_BARE),
        _first_call(report.first_call),
    ]


def _missing(figure: str, before: str, target: str) -> Verdict:
    return Verdict(figure, "-", before, target, None)


def _http_cpu(loads: dict[str, Load]) -> Verdict:
    figure, before, target = ("governed readonly http call: server CPU per call", "2.8-3.3 ms",
                              f"<= {HTTP_CALL_CPU_MS} ms")
    if not {"governed_imported", "mcp_imported", "bare_imported"} <= loads.keys():
        return _missing(figure, before, target)
    rest, mcp, bare = loads["governed_imported"], loads["mcp_imported"], loads["bare_imported"]
    measured = f"REST {rest.cpu_ms:.2f}, /mcp {mcp.cpu_ms:.2f} ms (bare view {bare.cpu_ms:.2f})"
    return Verdict(figure, measured, before, target, max(rest.cpu_ms, mcp.cpu_ms) <= HTTP_CALL_CPU_MS)


def _ratio(loads: dict[str, Load], figure: str, governed: str, baseline: str, before: str,
           at_least: float) -> Verdict:
    target = f">= {at_least}"
    if not {governed, baseline} <= loads.keys():
        return _missing(figure, before, target)
    ratio = loads[governed].rps / loads[baseline].rps
    measured = f"{ratio:.2f} ({loads[governed].rps:.0f} / {loads[baseline].rps:.0f})"
    return Verdict(figure, measured, before, target, ratio >= at_least)


def _federated_cpu(loads: dict[str, Load]) -> Verdict:
    figure, before, target = ("federated MCP call: CPU per call over the direct call", "~7 ms",
                              f"<= {FEDERATED_EXTRA_CPU_MS} ms")
    if not {"mcp_federated", "mcp_direct"} <= loads.keys():
        return _missing(figure, before, target)
    extra = loads["mcp_federated"].cpu_ms - loads["mcp_direct"].cpu_ms
    measured = (f"+{extra:.2f} ms ({loads['mcp_federated'].cpu_ms:.2f} against "
                f"{loads['mcp_direct'].cpu_ms:.2f})")
    return Verdict(figure, measured, before, target, extra <= FEDERATED_EXTRA_CPU_MS)


def _tail(loads: dict[str, Load]) -> Verdict:
    figure, before, target = ("/mcp and REST p99 at 8 connections, over the turns", "up to 109 ms",
                              f"<= {P99_OVER_P50:.0f} x p50")
    tails = {name: loads[key] for key, name in TAIL_LOADS.items() if key in loads}
    if not tails:
        return _missing(figure, before, target)
    name, worst = max(tails.items(), key=lambda item: item[1].p99_ms / item[1].p50_ms)
    measured = (f"worst {worst.p99_ms / worst.p50_ms:.1f} x: {name}, p99 {worst.p99_ms:.1f} ms, "
                f"p50 {worst.p50_ms:.1f} ms")
    return Verdict(figure, measured, before, target, worst.p99_ms <= P99_OVER_P50 * worst.p50_ms)


def _first_call(first: FirstCall | None) -> Verdict:
    figure, before, target = ("first federated call of a fresh worker", "160-170 ms",
                              f"<= {FIRST_CALL_OVER_WARM:.0f} x a warm call")
    if first is None:
        return _missing(figure, before, target)
    measured = f"p50 {first.first_p50_ms:.1f} ms, warm {first.warm_p50_ms:.1f} ms ({first.ratio:.2f} x)"
    return Verdict(figure, measured, before, target, first.ratio <= FIRST_CALL_OVER_WARM)


def verdict_lines(report: Report) -> list[str]:
    rows = verdicts(report)
    out = ["", "Targets: governance at the cost of a bare Django view (each against its baseline, this run)",
           f"{'figure':<58}{'this run':<66}{'before':<15}{'target':<22}verdict"]
    out += [f"{v.figure:<58}{v.measured:<66}{v.before:<15}{v.target:<22}{v.word}" for v in rows]
    measured = [v for v in rows if v.met is not None]
    met = sum(1 for v in measured if v.met)
    out.append(f"targets met: {met} of {len(measured)} measured ({len(rows)} in all)")
    return out
