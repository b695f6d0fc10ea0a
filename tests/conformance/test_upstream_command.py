"""`python -m conformance.upstream DOCUMENT`: the loopback upstream a person runs in a second
shell (README "Govern an existing API") prints where it listens, one line per request it
receives with its verdict, and stops cleanly on Ctrl-C."""

from __future__ import annotations

import re
import select
import signal
import subprocess
import sys
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).with_name("orders.json")


def _line(process: subprocess.Popen[str], timeout_s: float = 20) -> str:
    assert process.stdout is not None
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    assert ready, f"nothing printed within {timeout_s} s"
    return process.stdout.readline().rstrip("\n")


def test_it_prints_each_request_with_the_documents_verdict_and_stops_on_ctrl_c():
    process = subprocess.Popen(
        [sys.executable, "-m", "conformance.upstream", str(FIXTURE), "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )
    try:
        started = _line(process)
        url = re.search(r" on (http://127\.0\.0\.1:\d+) ", started)[1]
        assert started == (f"Checking requests against orders.json on {url} "
                           f"(the tools' base URL: {url}/v1). Ctrl-C stops it.")

        answer = httpx.post(f"{url}/v1/orders?dry=1", json={"item": "book", "quantity": 1})
        received = _line(process)
        httpx.post(f"{url}/v1/orders", content=b'{"item":\n"pen", "quantity": 2}',
                   headers={"Content-Type": "application/json"})
        valid = _line(process)

        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=20)
    finally:
        process.kill()

    assert answer.json() == {"id": "conformance"}
    assert received == ('POST /v1/orders?dry=1 {"item":"book","quantity":1} invalid: '
                        "Unknown query parameter 'dry' (the operation has none)")
    # one line per request whatever the body holds: a newline is shown as its escape
    assert valid == 'POST /v1/orders {"item":\\n"pen", "quantity": 2} valid'
    assert (process.returncode, out, err) == (0, "Stopped.\n", "")


def test_a_port_in_use_is_said_with_how_to_choose_another():
    with subprocess.Popen(
        [sys.executable, "-m", "conformance.upstream", str(FIXTURE), "--port", "0"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    ) as first:
        try:
            port = re.search(r":(\d+) ", _line(first))[1]
            second = subprocess.run(
                [sys.executable, "-m", "conformance.upstream", str(FIXTURE), "--port", port],
                cwd=ROOT, capture_output=True, text=True, timeout=60,
            )
        finally:
            first.send_signal(signal.SIGINT)
            first.communicate(timeout=20)

    assert second.returncode == 1
    assert second.stderr == (f"Cannot listen on 127.0.0.1:{port}: Address already in use "
                             "(another port: --port or $TOOLHUB_LOOPBACK_PORT).\n")
