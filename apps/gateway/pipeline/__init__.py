"""The validation layer: pure stages, one module each, run in this order by the gateway.

parse → normalize → schema → authorize (bindings, then the arguments' hash) → rules
(argument rules, then state rules) → guards (loop, rate). `resolve` explains unknown tools.
Each stage takes frozen inputs and returns the next value or raises a typed error from
apps.common.errors.
"""
