"""`make soak`: the whole system under load and faults, then an audit (run.py)."""
