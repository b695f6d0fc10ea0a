"""Every refused call of the corpus is repaired in one step by a client that reads only the
details' data fields (issue 24: every invalid_args says its fix in fields a program can apply)."""

from __future__ import annotations

import dataclasses
import json

import pytest

from apps.common.errors import InvalidArgsError
from apps.demo_shop.tool_definitions import DEMO_TOOLS
from apps.gateway.agent_catalogs import AgentCatalog
from apps.gateway.contracts import ToolCall, VersionSpec
from apps.gateway.pipeline.validate import validate_call
from tests.repair_client import apply_repair

from .miscalls import MISCALLS, Miscall
from .pipeline.conftest import make_context, make_version

_FIELDS = {f.name for f in dataclasses.fields(VersionSpec)}
CATALOG = AgentCatalog(
    callable={
        name: make_version(
            tool_id=index, tool_name=name, **{k: v for k, v in definition.items() if k in _FIELDS}
        )
        for index, (name, definition) in enumerate(DEMO_TOOLS.items(), start=1)
        if name != "run_python"
    }
)


def _validate(tool: str, arguments: dict) -> None:
    # Sent as JSON text, as a model's call arrives.
    call = ToolCall(call_id="call_1", name=tool, arguments=json.dumps(arguments))
    validate_call(catalog=CATALOG, call=call, context=make_context(), toolset=None, phase=None)


def _refusal(miscall: Miscall) -> dict:
    with pytest.raises(InvalidArgsError) as caught:
        _validate(miscall.tool, miscall.arguments)
    return json.loads(json.dumps(caught.value.as_envelope(call_id="call_1", tool=miscall.tool)))


def test_the_corpus_is_large_enough_and_covers_the_four_shop_tools():
    assert len(MISCALLS) >= 25
    assert {m.tool for m in MISCALLS} == {"search_orders", "get_order", "cancel_order", "refund_payment"}


@pytest.mark.parametrize("miscall", MISCALLS, ids=lambda m: m.id)
def test_a_refused_call_repaired_from_the_details_alone_passes_in_one_step(miscall):
    # given: the call, refused
    envelope = _refusal(miscall)
    assert envelope["kind"] == "invalid_args" and envelope["details"]
    blind = {k: v for k, v in envelope.items() if k not in ("hint", "message")}
    parts = max((len(d.get("split", [])) for d in blind["details"]), default=0) or 1

    # when: a client applies the details' fields (every part of a split, one call each)
    for part in range(parts):
        repaired = apply_repair(miscall.arguments, blind, part=part)

        # then: the repaired call passes validation
        _validate(miscall.tool, repaired)


@pytest.mark.parametrize("miscall", MISCALLS, ids=lambda m: m.id)
def test_every_detail_carries_a_fix_and_never_a_null(miscall):
    repair_fields = {"allowed", "minimum", "maximum", "maxLength", "example", "default", "missing",
                     "unexpected", "swap", "split"}

    for detail in _refusal(miscall)["details"]:
        assert detail["path"].startswith("/") and detail["problem"]
        assert None not in detail.values()
        assert repair_fields & set(detail), detail
