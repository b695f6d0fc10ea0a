#!/usr/bin/env bash
# `make run`: the whole demo on one machine that has only Python. Migrates, seeds the demo,
# then runs the web server (admin, agent API, demo payments upstream), a Celery worker,
# Celery beat, the demo shipping MCP server and the MCP bridge (stdio MCP servers, under
# bubblewrap: installed here when it can be, else the bridge is left out and said so) side
# by side, prints the banner (logins, key, URLs) once they answer, and runs until Ctrl-C,
# which stops them all and exits 0.
#
# Defaults need no service: SQLite and a filesystem broker under var/ (TOOLHUB_VAR_DIR
# moves it). DATABASE_URL and CELERY_BROKER_URL (environment or .env) switch to
# PostgreSQL / Redis; TOOLHUB_PORT moves the server off 8000, TOOLHUB_DEMO_MCP_PORT the demo
# MCP server off the port after it, TOOLHUB_MCP_BRIDGE_PORT the bridge off the port after that.
#
# Logs are for a person at a terminal: plain one-line records, coloured on a terminal,
# and routine lines (startup, beat's periodic jobs, probes) at DEBUG, so the terminal
# shows what happens. LOG_FORMAT, LOG_COLOR and LOG_ROUTINE_LEVEL in the environment win.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/services.sh

PY=.venv/bin/python
BIN=.venv/bin
PORT=${TOOLHUB_PORT:-8000}
BASE_URL="http://127.0.0.1:${PORT}"

# A setting as the processes will see it: the environment's value, else .env's.
setting() {
  local name=$1
  if [ -n "${!name:-}" ]; then
    printf '%s' "${!name}"
  else
    sed -n "s/^${name}=//p" .env 2>/dev/null | tail -n 1 | tr -d "\"'" || true
  fi
}

# SQLite, the filesystem broker and the file cache live here (the settings read it too).
VAR_DIR=$(setting TOOLHUB_VAR_DIR)
VAR_DIR=${VAR_DIR:-var}
case $VAR_DIR in /*) ;; *) VAR_DIR="${PWD}/${VAR_DIR}" ;; esac
export TOOLHUB_VAR_DIR=$VAR_DIR

# The http executor reaches the demo payments upstream on this same server (the settings
# derive TOOLHUB_DEMO_PAYMENTS_URL from TOOLHUB_PORT): the egress policy must let it reach
# this loopback port, on top of whatever the environment or .env allows.
allow=$(setting TOOLHUB_EGRESS_ALLOW)
# The mcp executor reaches the demo shipping MCP server on its own port (the settings derive
# TOOLHUB_DEMO_SHIPPING_MCP_URL from TOOLHUB_DEMO_MCP_PORT, by default TOOLHUB_PORT + 1).
MCP_PORT=$(setting TOOLHUB_DEMO_MCP_PORT)
MCP_PORT=${MCP_PORT:-$((PORT + 1))}
BRIDGE_PORT=$(setting TOOLHUB_MCP_BRIDGE_PORT)
BRIDGE_PORT=${BRIDGE_PORT:-$((MCP_PORT + 1))}
export TOOLHUB_PORT=$PORT TOOLHUB_DEMO_MCP_PORT=$MCP_PORT TOOLHUB_MCP_BRIDGE_PORT=$BRIDGE_PORT
export TOOLHUB_EGRESS_ALLOW="${allow:+${allow},}127.0.0.1:${PORT},127.0.0.1:${MCP_PORT}"
# The demo MCP server and seed_demo's credential for it must agree on its key.
shipping_key=$(setting DEMO_SHIPPING_API_KEY)
if [ -n "$shipping_key" ]; then export DEMO_SHIPPING_API_KEY=$shipping_key; fi

export LOG_FORMAT=${LOG_FORMAT:-plain}
export LOG_ROUTINE_LEVEL=${LOG_ROUTINE_LEVEL:-DEBUG}
# Celery's --loglevel sets the root level of the worker and beat: the one the settings use.
LOG_LEVEL=$(setting LOG_LEVEL)
LOG_LEVEL=${LOG_LEVEL:-INFO}

# Web workers, Celery and beat are separate processes: the settings' default in-memory
# cache would give each its own key cache and rate counters, so share one on disk.
if [ -z "$(setting CACHE_URL)" ]; then
  export CACHE_URL="filecache://${VAR_DIR}/cache"
fi

# What a `manage.py` command in another shell must see to act on this demo as its server
# does: the settings read this file below the environment (toolhub/settings/env_files.py).
# Only owner-readable: a DATABASE_URL given in the environment may carry a password.
write_run_env() {
  local name
  mkdir -p "$VAR_DIR"
  (
    umask 077
    {
      echo "# Written by make run (scripts/run.sh) at each start; manage.py reads it. Do not edit."
      for name in TOOLHUB_VAR_DIR TOOLHUB_PORT TOOLHUB_DEMO_MCP_PORT TOOLHUB_MCP_BRIDGE_PORT \
                  TOOLHUB_EGRESS_ALLOW CACHE_URL \
                  DATABASE_URL CELERY_BROKER_URL; do
        if [ -n "$(setting "$name")" ]; then printf '%s=%s\n' "$name" "$(setting "$name")"; fi
      done
    } > "$VAR_DIR/run.env"
  )
}
write_run_env

pids=()
names=()
stopping=0
MCP_SERVER="demo MCP server"
BRIDGE="MCP bridge"

# Each process runs in a session of its own, so stopping its process group also stops
# its children (gunicorn and Celery workers) and a Ctrl-C reaches only this script.
start() {
  local name=$1
  shift
  "$PY" -c 'import os, sys; os.setsid(); os.execvp(sys.argv[1], sys.argv[1:])' "$@" &
  pids+=("$!")
  names+=("$name")
}

any_alive() {
  local pid
  for pid in "$@"; do
    if kill -0 -- "-$pid" 2>/dev/null; then return 0; fi
  done
  return 1
}

# Half a system is worse than none: when one process dies, stop the others.
stop_if_one_died() {
  local i
  for i in "${!pids[@]}"; do
    if ! kill -0 "${pids[$i]}" 2>/dev/null; then
      echo "The ${names[$i]} process exited; stopping the others." >&2
      stop 1
    fi
  done
}

# TERM to each main process lets gunicorn and Celery shut their children down in order;
# whatever of a group is still there after 15 s is killed.
stop_processes() {
  local pid
  if [ $# -eq 0 ]; then return; fi
  for pid in "$@"; do kill -TERM "$pid" 2>/dev/null || true; done
  for _ in $(seq 1 30); do any_alive "$@" || break; sleep 0.5; done
  for pid in "$@"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
}

stop() {
  local code=$1 i
  local callers=() called=()
  if [ "$stopping" = 1 ]; then return; fi
  stopping=1
  trap - INT TERM HUP
  if [ ${#pids[@]} -gt 0 ]; then
    echo "Stopping the web server, the Celery worker, Celery beat, the demo MCP server and the MCP bridge…"
    # The MCP servers last: the web server and the worker hold MCP sessions (open streams)
    # to them, which their exit closes; stopped first, they would cut each one off and log
    # it as a response never completed.
    for i in "${!pids[@]}"; do
      case ${names[$i]} in
        "$MCP_SERVER"|"$BRIDGE") called+=("${pids[$i]}") ;;
        *) callers+=("${pids[$i]}") ;;
      esac
    done
    stop_processes "${callers[@]}"
    stop_processes "${called[@]}"
    wait 2>/dev/null || true
    echo "Stopped."
  fi
  exit "$code"
}
# Ctrl-C is how a person ends `make run`: a clean stop, not an error.
trap 'stop 0' INT
trap 'stop 143' TERM
trap 'stop 129' HUP
trap 'stop $?' EXIT

mkdir -p "$VAR_DIR"/broker "$VAR_DIR"/broker-processed "$VAR_DIR"/broker-control
echo "Preparing the database…"
"$PY" manage.py migrate --noinput -v 0
"$PY" manage.py collectstatic --noinput -v 0
seeded=$("$PY" manage.py seed_demo)
printed() { printf '%s\n' "$seeded" | sed -n "s/^$1=//p"; }
admin_user=$(printed ADMIN_USER)
admin_password=$(printed ADMIN_PASSWORD)
agent_key=$(printed AGENT_KEY)

print_banner() {
  cat <<BANNER

================================================================================
 ToolHub is running (demo tenant "demo", agent "support-bot")

   Admin         ${BASE_URL}/admin/
                 user ${admin_user}   password ${admin_password}
   Agent API     ${BASE_URL}/api/v1/        API docs ${BASE_URL}/api/docs/
                 Authorization: Bearer ${agent_key}
   Health        ${BASE_URL}/healthz   ${BASE_URL}/readyz
   Demo upstream ${BASE_URL}/demo/payments/refunds
   Demo MCP      http://127.0.0.1:${MCP_PORT}/mcp   (shipping: track_shipment, schedule_pickup,
                 pickup_status; README "Govern an MCP server", make it drift: POST /drift)
   MCP bridge    ${bridge_line}
   Operator demo .venv/bin/python manage.py demo_scenarios   (fills triage, approvals, ledger)

 Demo credentials derive from SECRET_KEY: set SECRET_KEY (and TOOLHUB_ADMIN_PASSWORD)
 in .env before exposing this anywhere. Ctrl-C stops everything.
================================================================================
ADMIN_USER=${admin_user}
ADMIN_PASSWORD=${admin_password}
AGENT_KEY=${agent_key}

BANNER
}

echo "Starting the web server, a Celery worker and Celery beat on ${BASE_URL}, the demo MCP server on port ${MCP_PORT}, the MCP bridge on port ${BRIDGE_PORT}…"
start web "$BIN/gunicorn" toolhub.wsgi:application --bind "127.0.0.1:${PORT}" \
  --worker-class gthread --workers 2 --threads 4 --timeout 60 --graceful-timeout 5 \
  --no-control-socket
# Stdio MCP servers (the bridge) and code runs (on the workers) run under bubblewrap: checked
# (and installed where we may) before the workers start, so they start their sandboxes warm.
# Without it, the rest of the demo still runs.
have_bubblewrap=0
if need_bubblewrap; then have_bubblewrap=1; fi
# --quiet: no ASCII-art banners on stdout; what they say is in the logs, at DEBUG.
start worker "$BIN/celery" -A toolhub --quiet worker --loglevel "$LOG_LEVEL" --concurrency 2 --hostname "toolhub@%h"
start beat "$BIN/celery" -A toolhub --quiet beat --loglevel "$LOG_LEVEL"
start "$MCP_SERVER" "$PY" -m apps.demo_shop.shipping --port "$MCP_PORT"
if [ "$have_bubblewrap" = 1 ]; then
  start "$BRIDGE" "$PY" manage.py mcp_bridge --port "$BRIDGE_PORT"
  bridge_line="http://127.0.0.1:${BRIDGE_PORT}   (stdio MCP servers: README \"Servers that speak stdio\")"
else
  bridge_line="not started: install bubblewrap to run stdio MCP servers (and code runs)"
fi

# The banner comes once the server answers /readyz (database and broker reachable) and the
# demo MCP server its /healthz, so it is the last thing on the screen, not lost above the
# processes' startup lines.
answers() { "$PY" -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=1)' "$1" 2>/dev/null; }
wait_for() {
  local url=$1 what=$2 port=$3
  for _ in $(seq 1 60); do
    if answers "$url"; then return; fi
    stop_if_one_died
    sleep 0.5
  done
  echo "The ${what} did not answer ${url} within 30 s; is port ${port} free?" >&2
  stop 1
}
wait_for "${BASE_URL}/readyz" "web server" "$PORT"
wait_for "http://127.0.0.1:${MCP_PORT}/healthz" "demo MCP server" "$MCP_PORT"
if [ "${names[-1]}" = "$BRIDGE" ]; then
  wait_for "http://127.0.0.1:${BRIDGE_PORT}/healthz" "MCP bridge" "$BRIDGE_PORT"
fi
print_banner

while true; do
  stop_if_one_died
  sleep 1
done
