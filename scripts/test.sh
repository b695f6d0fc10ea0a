#!/usr/bin/env bash
# The whole suite on PostgreSQL and a real Redis broker (`make test`).
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

if [ -z "${DATABASE_URL:-}" ]; then need_postgres; fi
if [ -z "${CELERY_BROKER_URL:-}" ] || [ -z "${CACHE_URL:-}" ]; then need_redis; fi

need_bubblewrap

# The admin's browser tests drive Debian's chromium (never a browser download of Playwright's).
if [ ! -x /usr/bin/chromium ] && command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
  echo "Installing Debian's chromium for the browser tests…"
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y -qq chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium; }
fi

exec .venv/bin/pytest "$@"
