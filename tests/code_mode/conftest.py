"""Code mode end to end: the seeded demo over loopback HTTP, runs on the session's real
Celery worker, each run's code in the real sandbox."""

from tests.e2e.conftest import Agent, celery_worker, demo

__all__ = ["Agent", "celery_worker", "demo"]
