#!/usr/bin/env bash
# The whole suite on PostgreSQL and a real Redis broker (`make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

if [ -z "${DATABASE_URL:-}" ]; then need_postgres; fi
if [ -z "${CELERY_BROKER_URL:-}" ] || [ -z "${CACHE_URL:-}" ]; then need_redis; fi

exec .venv/bin/pytest "$@"
