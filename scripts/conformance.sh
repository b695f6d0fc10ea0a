#!/usr/bin/env bash
# `make conformance`: start what the run needs (PostgreSQL for its own database, Redis for the
# cache), then run it (see conformance/run.py and docs/conformance.md).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh
if [ -z "${DATABASE_URL:-}" ]; then need_postgres; fi
if [ -z "${CACHE_URL:-}" ]; then need_redis; fi
exec .venv/bin/python -m conformance.run "$@"
