"""`request_capability`: the built-in tool every agent can call in every toolset and phase.

A model that lacks a tool should say so instead of inventing one or giving up silently
(principle 16). It is not a catalog row: the gateway's catalog adds this spec for every
agent. Its python executor (capability_search.py) looks for what was asked among the tools
the agent is granted, opens the matches it may to the task, and hands the request to the
capability recorder (apps/common/capability_hooks.py), which the capabilities app registers.
"""

from __future__ import annotations

from types import MappingProxyType

from apps.common.builtin_tools import REQUEST_CAPABILITY

from .contracts import VersionSpec

REQUEST_CAPABILITY_CALLABLE = "toolhub.request_capability"

_PARAMETERS = {
    "type": "object",
    "properties": {
        "capability": {
            "type": "string",
            "minLength": 3,
            "maxLength": 100,
            "description": 'What you need, in a few words, e.g. "export orders as CSV" or the name of '
            "the tool you looked for.",
        },
        "reason": {
            "type": "string",
            "minLength": 3,
            "maxLength": 1000,
            "description": "What the user asked for that none of your tools can do.",
        },
        # A string, not an object: strict exports (OpenAI) cannot carry a free-form object,
        # whose keys would all be forbidden by additionalProperties: false.
        "example_arguments": {
            "type": ["string", "null"],
            "maxLength": 2000,
            "description": "The arguments you would have sent to such a tool, as JSON text, e.g. "
            '"{\\"order_id\\": \\"ORD-000042\\"}"; null if you have none.',
        },
    },
    "required": ["capability", "reason", "example_arguments"],
    "additionalProperties": False,
}

REQUEST_CAPABILITY_SPEC = VersionSpec(
    tool_id=0,
    tool_name=REQUEST_CAPABILITY,
    version_id=0,
    number=1,
    status="published",
    description=(
        "Ask for a capability you need that none of your tools here provides (or a tool you tried "
        "that is not available here). Use it instead of guessing or inventing a tool. If a tool "
        "you are granted elsewhere does it, it is opened to this task and listed in matches with "
        "its parameters: call it next. Otherwise the operators are told; tell the user this cannot "
        "be done yet. Call it once per missing capability."
    ),
    parameters=MappingProxyType(_PARAMETERS),
    strict=True,
    # Recording a request again only counts it again: safe to run concurrently, no ledger.
    side_effect="recomputable",
    executor="python",
    executor_config=MappingProxyType({"callable": REQUEST_CAPABILITY_CALLABLE}),
    timeout_s=5.0,
    # Up to three matches, each opened one with its parameters.
    max_chars=6000,
    mode="sync",
    normalizers=MappingProxyType({"capability": ("trim", "lower"), "reason": ("trim",)}),
    context_bindings=MappingProxyType({}),
    rules=(),
    approval=MappingProxyType({}),
    empty_meaning="",
    loop_limit=3,
    revision="builtin:request_capability:2",
)
