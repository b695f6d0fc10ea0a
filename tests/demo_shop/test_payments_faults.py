"""Faults armed ahead (admin, services) and consumed once by the payments upstream."""

from __future__ import annotations

import httpx
import pytest
from django.contrib.auth.models import User
from django.test import Client

from apps.audit.models import AuditEvent
from apps.demo_shop.models import DemoRefund, PaymentsFault, PaymentsFaultKind
from apps.demo_shop.services import payments_fault_arm

from .factories import DemoOrderFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _refund(client: httpx.Client, key: str) -> httpx.Response:
    return client.post("/refunds", json={"order_id": "ORD-000001", "amount_cents": 100},
                       headers={"Idempotency-Key": key})


def test_an_armed_failure_after_recording_hits_the_next_refund_only(payments):
    # given
    DemoOrderFactory(order_id="ORD-000001", amount_cents=5_000)
    payments_fault_arm(kind=PaymentsFaultKind.FAIL_AFTER, actor="test")

    # when
    failed = _refund(payments, "key-1")
    next_one = _refund(payments, "key-2")

    # then: the first was recorded and answered 500; the second is normal
    assert failed.status_code == 500
    assert next_one.status_code == 201
    assert DemoRefund.objects.count() == 2
    assert PaymentsFault.objects.get().used_at is not None


def test_an_armed_failure_before_recording_records_nothing(payments):
    DemoOrderFactory(order_id="ORD-000001", amount_cents=5_000)
    payments_fault_arm(kind=PaymentsFaultKind.FAIL_BEFORE, actor="test")

    response = _refund(payments, "key-1")

    assert response.status_code == 503
    assert not DemoRefund.objects.exists()


def test_armed_status_faults_fail_as_many_status_checks(payments):
    DemoOrderFactory(order_id="ORD-000001", amount_cents=5_000)
    _refund(payments, "key-1")
    payments_fault_arm(kind=PaymentsFaultKind.STATUS_DOWN, actor="test", times=2)

    answers = [payments.get("/refunds", params={"idempotency_key": "key-1"}).status_code for _ in range(3)]

    assert answers == [503, 503, 200]


def test_an_operator_arms_a_timeout_in_the_admin():
    # given
    User.objects.create_superuser("root", "root@example.com", "pw")
    client = Client()
    client.login(username="root", password="pw")

    # when
    form = client.get("/admin/demo_shop/paymentsfault/add/")
    response = client.post("/admin/demo_shop/paymentsfault/add/", {"kind": "timeout"}, follow=True)

    # then
    assert "the next refund times out" in form.content.decode()
    assert response.status_code == 200
    fault = PaymentsFault.objects.get()
    assert (fault.kind, fault.armed_by, fault.used_at) == ("timeout", "admin:root", None)
    assert AuditEvent.objects.filter(action="demo_payments.fault_arm", actor="admin:root").exists()
