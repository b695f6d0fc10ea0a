# Sourced by scripts: start the local PostgreSQL / Redis the tests need when they are
# installed but stopped; say what to install when they are missing.

need_postgres() {
  if pg_isready -q -h 127.0.0.1 -p 5432 2>/dev/null; then return 0; fi
  if command -v pg_ctlcluster >/dev/null 2>&1 && ls /etc/postgresql >/dev/null 2>&1; then
    echo "Starting the local PostgreSQL…"
    pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | sort -V | tail -1)" main start
    for _ in $(seq 1 30); do pg_isready -q -h 127.0.0.1 -p 5432 && return 0; sleep 1; done
  fi
  echo "PostgreSQL is not reachable on 127.0.0.1:5432 and could not be started." >&2
  echo "Install it (Debian: apt-get install postgresql) or set DATABASE_URL." >&2
  return 1
}

need_redis() {
  if redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1; then return 0; fi
  if command -v redis-server >/dev/null 2>&1; then
    echo "Starting the local Redis…"
    mkdir -p /tmp/toolhub-redis
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no \
      --dir /tmp/toolhub-redis --logfile /tmp/toolhub-redis/redis.log
    for _ in $(seq 1 30); do redis-cli -h 127.0.0.1 -p 6379 ping >/dev/null 2>&1 && return 0; sleep 1; done
  fi
  echo "Redis is not reachable on 127.0.0.1:6379 and could not be started." >&2
  echo "Install it (Debian: apt-get install redis-server) or set CELERY_BROKER_URL/CACHE_URL." >&2
  return 1
}

# The MCP bridge runs stdio MCP servers under bubblewrap (apps/bridge), and code runs
# (run_python) run under bubblewrap with a seccomp filter compiled by libseccomp: install
# Debian's packages where we may, else say what is missing (neither runs without them).
need_bubblewrap() {
  if command -v bwrap >/dev/null 2>&1 && ldconfig -p 2>/dev/null | grep -q libseccomp.so.2; then return 0; fi
  if command -v apt-get >/dev/null 2>&1 && [ "$(id -u)" = 0 ]; then
    echo "Installing Debian's bubblewrap and libseccomp2 (the isolation of stdio MCP servers and code runs)…"
    export DEBIAN_FRONTEND=noninteractive
    apt-get install -y -qq bubblewrap libseccomp2 >/dev/null 2>&1 \
      || { apt-get update -qq && apt-get install -y -qq bubblewrap libseccomp2; }
    return 0
  fi
  echo "bubblewrap (bwrap) or libseccomp2 is not installed: stdio MCP servers and code runs cannot run." >&2
  echo "Install them (Debian: apt-get install bubblewrap libseccomp2)." >&2
  return 1
}
