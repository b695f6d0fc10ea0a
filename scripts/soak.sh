#!/usr/bin/env bash
# `make soak`: web, two workers and beat under load and faults, then a ledger audit (soak/run.py).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
need_postgres
need_redis
exec .venv/bin/python -m soak.run "$@"
