"""Code mode's isolated process: a model's Python code run in a sandbox, its tool calls
sent back to ToolHub over a channel of JSON lines (runs.py `run_code`; isolation.py says
what confines it and why)."""
