"""The validation layer: pure stages, one module each, run in this order by the gateway.

parse → schema → normalize → authorize (bindings) → rules (argument rules, then state
rules) → guards (loop, rate). `resolve` explains unknown tools. Each stage takes frozen
inputs and returns the next value or raises a typed error from apps.common.errors.
"""
