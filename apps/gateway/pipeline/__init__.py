"""The validation layer: pure stages, one module each, in the order validate.py declares.

tool_lookup → parse → (optional nulls dropped) → normalize → schema → authorize (bindings,
then the arguments' hash) → rules (argument rules; state rules once the gateway has read the
task's counters) → guards (loop, rate). `unknown_tool` words the error for a tool the agent
cannot see; `plan` decides how a validated call runs. Each stage takes frozen inputs and
returns the next value or raises a typed error from apps.common.errors.
"""
