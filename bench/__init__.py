"""`make bench` and `make profile`: what governance costs, measured (docs/performance.md).

A bench-only Django app as well: `bench.settings` installs it, so the benchmark's server
has the bench tools' executors; the demo and the test settings never load it.
"""
