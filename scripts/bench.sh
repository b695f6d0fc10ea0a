#!/usr/bin/env bash
# `make bench`: start what the benchmark needs, then run it (see bench/run.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
need_postgres
need_redis
need_bubblewrap  # the stdio part's MCP bridge, and code mode's sandboxes
if ! command -v wrk >/dev/null 2>&1; then
  echo "Installing wrk (the load generator) from Debian's packages…"
  apt-get install -y -q wrk >/dev/null || { echo "Install wrk: apt-get install wrk" >&2; exit 1; }
fi
exec .venv/bin/python -m bench.run "$@"
