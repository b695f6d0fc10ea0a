"""The filesystem broker `make run` uses: a worker never takes a message still being written."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from queue import Empty

from kombu import Connection

ROOT = Path(__file__).resolve().parents[2]
TRANSPORT = "apps.common.filesystem_broker:Transport"
MESSAGES = 300


def _channel(folder: Path):
    options = {"data_folder_in": str(folder), "data_folder_out": str(folder),
               "processed_folder": str(folder), "control_folder": str(folder), "store_processed": False}
    return Connection("filesystem://", transport=TRANSPORT, transport_options=options).channel()


def test_a_worker_reading_while_beat_writes_gets_every_message_whole(tmp_path):
    # given a consumer polling the folder as the worker does, and large messages (kombu's own
    # transport hands the consumer an empty file within a few of them: JSONDecodeError)
    producer, consumer = _channel(tmp_path), _channel(tmp_path)
    received: list[dict] = []
    failures: list[str] = []

    def consume() -> None:
        deadline = time.monotonic() + 60
        while len(received) < MESSAGES and time.monotonic() < deadline:
            try:
                received.append(consumer._get("celery"))
            except Empty:
                continue
            except Exception as error:  # what stopped the worker: record it and stop as it did
                failures.append(repr(error))
                return

    reader = threading.Thread(target=consume)
    reader.start()

    # when
    for number in range(MESSAGES):
        producer._put("celery", {"number": number, "body": "x" * 200_000})
    reader.join()

    # then
    assert failures == []
    assert sorted(message["number"] for message in received) == list(range(MESSAGES))
    assert os.listdir(tmp_path) == []


def test_make_runs_settings_and_the_celery_app_use_it_for_a_filesystem_broker(tmp_path):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "toolhub.settings.base", "CELERY_BROKER_URL": "filesystem://",
           "TOOLHUB_VAR_DIR": str(tmp_path)}
    env.pop("DATABASE_URL", None)

    used = subprocess.run(
        [sys.executable, "-c", "import django; django.setup(); from toolhub.celery import app; "
         "print(type(app.connection_for_write().transport).__module__)"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60,
    )

    assert used.returncode == 0, used.stderr[-2000:]
    assert used.stdout.strip().splitlines()[-1] == "apps.common.filesystem_broker"
