"""The demo payments provider over real loopback HTTP (live_server + httpx)."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from apps.demo_shop.models import DemoRefund
from apps.demo_shop.services import set_status_endpoint_down

from .factories import DemoOrderFactory

pytestmark = pytest.mark.django_db(transaction=True)


def _refund(client: httpx.Client, key: str, *, params: dict | None = None, **body: object) -> httpx.Response:
    return client.post("/refunds", json=body, headers={"Idempotency-Key": key}, params=params)


def test_a_refund_is_recorded_and_a_replay_returns_the_same_refund(payments):
    # given
    DemoOrderFactory(order_id="ORD-000001", amount_cents=5_000)

    # when
    first = _refund(payments, "key-1", order_id="ORD-000001", amount_cents=1_250)
    replay = _refund(payments, "key-1", order_id="ORD-000001", amount_cents=1_250)

    # then
    assert first.status_code == 201
    body = first.json()
    assert body["refund_id"].startswith("re_")
    assert body["order_id"] == "ORD-000001"
    assert body["amount_cents"] == 1_250
    assert body["idempotency_key"] == "key-1"
    assert body["created_at"]
    assert replay.status_code == 200
    assert replay.json() == body
    assert replay.headers["Idempotent-Replayed"] == "true"
    assert DemoRefund.objects.count() == 1


def test_twenty_concurrent_identical_requests_record_exactly_one_refund(payments):
    # given
    DemoOrderFactory(order_id="ORD-000002", amount_cents=9_000)
    start = threading.Barrier(20)

    def post(_: int) -> httpx.Response:
        start.wait()
        return _refund(payments, "key-concurrent", order_id="ORD-000002", amount_cents=900)

    # when
    with ThreadPoolExecutor(max_workers=20) as pool:
        responses = list(pool.map(post, range(20)))

    # then
    assert sorted(r.status_code for r in responses) == [200] * 19 + [201]
    assert len({r.json()["refund_id"] for r in responses}) == 1
    assert DemoRefund.objects.count() == 1


def test_the_status_endpoint_finds_a_refund_by_its_key(payments):
    # given
    DemoOrderFactory(order_id="ORD-000003")
    created = _refund(payments, "key-3", order_id="ORD-000003", amount_cents=100).json()

    # when
    found = payments.get("/refunds", params={"idempotency_key": "key-3"})
    missing = payments.get("/refunds", params={"idempotency_key": "never-sent"})

    # then
    assert found.status_code == 200
    assert found.json() == created
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "refund_not_found"


def test_the_status_endpoint_can_be_taken_down_for_reconciliation_tests(payments):
    # given
    DemoOrderFactory(order_id="ORD-000004")
    _refund(payments, "key-4", order_id="ORD-000004", amount_cents=100)

    # when
    set_status_endpoint_down(True)
    while_down = payments.get("/refunds", params={"idempotency_key": "key-4"})
    set_status_endpoint_down(False)
    back_up = payments.get("/refunds", params={"idempotency_key": "key-4"})

    # then
    assert while_down.status_code == 503
    assert while_down.json()["error"]["code"] == "unavailable"
    assert back_up.status_code == 200


def test_fail_before_answers_503_and_records_nothing(payments):
    # given
    DemoOrderFactory(order_id="ORD-000005")

    # when
    response = _refund(
        payments, "key-5", order_id="ORD-000005", amount_cents=100, params={"fail": "before"}
    )

    # then
    assert response.status_code == 503
    assert DemoRefund.objects.count() == 0
    assert payments.get("/refunds", params={"idempotency_key": "key-5"}).status_code == 404


def test_fail_after_records_the_refund_and_answers_500(payments):
    # given
    DemoOrderFactory(order_id="ORD-000006")

    # when
    response = _refund(
        payments, "key-6", order_id="ORD-000006", amount_cents=100, params={"fail": "after"}
    )

    # then: the client saw a failure, yet the refund exists and the status endpoint says so
    assert response.status_code == 500
    assert DemoRefund.objects.filter(idempotency_key="key-6").count() == 1
    status = payments.get("/refunds", params={"idempotency_key": "key-6"})
    assert status.status_code == 200
    replay = _refund(payments, "key-6", order_id="ORD-000006", amount_cents=100)
    assert replay.status_code == 200
    assert replay.json()["refund_id"] == status.json()["refund_id"]
    assert DemoRefund.objects.count() == 1


def test_a_delay_past_the_client_timeout_leaves_the_refund_recorded(payments):
    # given
    DemoOrderFactory(order_id="ORD-000007")

    # when
    with pytest.raises(httpx.ReadTimeout):
        payments.post(
            "/refunds", json={"order_id": "ORD-000007", "amount_cents": 100},
            headers={"Idempotency-Key": "key-7"}, params={"delay_ms": 1_500}, timeout=0.3,
        )

    # then
    assert DemoRefund.objects.filter(idempotency_key="key-7", order_id="ORD-000007").count() == 1


@pytest.mark.parametrize(
    "headers",
    [{}, {"Authorization": "Bearer wrong-key"}, {"Authorization": "Basic YWRtaW46YWRtaW4="}],
    ids=["no-header", "wrong-key", "other-scheme"],
)
def test_requests_without_the_api_key_are_refused(live_server, headers):
    # given
    DemoOrderFactory(order_id="ORD-000008")
    url = f"{live_server.url}/demo/payments/refunds"

    # when
    post = httpx.post(
        url, json={"order_id": "ORD-000008", "amount_cents": 100},
        headers={**headers, "Idempotency-Key": "key-8"},
    )
    get = httpx.get(url, params={"idempotency_key": "key-8"}, headers=headers)

    # then
    assert post.status_code == 401
    assert post.json()["error"]["code"] == "unauthorized"
    assert get.status_code == 401
    assert DemoRefund.objects.count() == 0


def test_a_refund_without_an_idempotency_key_is_refused(payments):
    # given
    DemoOrderFactory(order_id="ORD-000009")

    # when
    response = payments.post("/refunds", json={"order_id": "ORD-000009", "amount_cents": 100})

    # then
    assert response.status_code == 400
    assert "Idempotency-Key" in response.json()["error"]["message"]
    assert DemoRefund.objects.count() == 0


def test_the_same_key_with_another_body_is_a_conflict(payments):
    # given
    DemoOrderFactory(order_id="ORD-000010")
    first = _refund(payments, "key-10", order_id="ORD-000010", amount_cents=100).json()

    # when
    response = _refund(payments, "key-10", order_id="ORD-000010", amount_cents=200)

    # then
    assert response.status_code == 409
    error = response.json()["error"]
    assert error["code"] == "idempotency_key_reused"
    assert "new key" in error["message"]
    assert list(DemoRefund.objects.values_list("refund_id", "amount_cents")) == [(first["refund_id"], 100)]


@pytest.mark.parametrize(
    ("body", "status", "code"),
    [
        ({"order_id": "ORD-999999", "amount_cents": 100}, 404, "order_not_found"),
        ({"order_id": "ORD-000011", "amount_cents": 100, "user_id": "u-2002"}, 404, "order_not_found"),
        ({"order_id": "ORD-000011", "amount_cents": 0}, 422, "invalid_amount"),
        ({"order_id": "ORD-000011", "amount_cents": 5_001}, 422, "amount_exceeds_order"),
        ({"order_id": "ORD-000011", "amount_cents": "100"}, 400, "invalid_request"),
    ],
    ids=["unknown-order", "another-users-order", "zero", "more-than-the-order", "not-an-integer"],
)
def test_documented_rejections_record_nothing(payments, body, status, code):
    # given
    DemoOrderFactory(order_id="ORD-000011", user_id="u-1001", amount_cents=5_000)

    # when
    response = payments.post("/refunds", json=body, headers={"Idempotency-Key": "key-11"})

    # then
    assert response.status_code == status
    assert response.json()["error"]["code"] == code
    assert response.json()["error"]["message"]
    assert DemoRefund.objects.count() == 0


def test_the_whole_amount_of_the_order_can_be_refunded_for_its_owner(payments):
    # given
    DemoOrderFactory(order_id="ORD-000012", user_id="u-1001", amount_cents=5_000)

    # when
    response = _refund(payments, "key-12", order_id="ORD-000012", amount_cents=5_000, user_id="u-1001")

    # then
    assert response.status_code == 201
    assert DemoRefund.objects.get().amount_cents == 5_000


def test_refunds_of_an_order_never_add_up_to_more_than_its_amount(payments):
    # given
    DemoOrderFactory(order_id="ORD-000013", user_id="u-1001", amount_cents=5_000)
    _refund(payments, "key-13a", order_id="ORD-000013", amount_cents=3_000)

    # when
    past = _refund(payments, "key-13b", order_id="ORD-000013", amount_cents=2_001)
    rest = _refund(payments, "key-13c", order_id="ORD-000013", amount_cents=2_000)
    after = _refund(payments, "key-13d", order_id="ORD-000013", amount_cents=1)

    # then
    assert past.status_code == 409
    assert past.json()["error"] == {
        "code": "amount_exceeds_refundable",
        "message": "Only 2000 cents of order ORD-000013 are left to refund (3000 of its 5000 cents "
        "are already refunded), not 2001.",
    }
    assert rest.status_code == 201
    assert after.status_code == 409
    assert "already refunded in full (5000 cents)" in after.json()["error"]["message"]
    assert sorted(DemoRefund.objects.values_list("amount_cents", flat=True)) == [2_000, 3_000]


def test_concurrent_full_refunds_of_one_order_refund_it_once(payments):
    # given
    DemoOrderFactory(order_id="ORD-000014", amount_cents=5_000)
    start = threading.Barrier(10)

    def post(n: int) -> httpx.Response:
        start.wait()
        return _refund(payments, f"key-14-{n}", order_id="ORD-000014", amount_cents=5_000)

    # when
    with ThreadPoolExecutor(max_workers=10) as pool:
        responses = list(pool.map(post, range(10)))

    # then
    assert sorted(r.status_code for r in responses) == [201] + [409] * 9
    assert DemoRefund.objects.count() == 1
