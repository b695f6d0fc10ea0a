"""One module per private internal of a library ToolHub relies on, so that each reliance is
written in one place, says which versions it was checked against, and has a canary test
(tests/common/compat/) that fails first, with a clear message, when an upgrade changes it.

Each module imports only its own library: importing one never imports another's.
"""
