"""A rule about state, checked before an approval is asked for: refund_payment may refund at
most what is left of the order (its amount less earlier refunds), read before the business
rules stage, so an amount no operator could approve is refused at once (business_rule, the
amount left named), with no ledger entry, no approval and nothing sent to the provider."""

from __future__ import annotations

from apps.demo_shop.models import DemoRefund
from apps.demo_shop.tools import refundable_cents
from apps.ledger.models import Approval, LedgerEntry
from apps.tenancy.sessions import SessionClaims
from tests.demo_shop.factories import DemoOrderFactory
from tests.e2e.test_demo_tools import an_order
from tests.gateway.pipeline.conftest import make_context

# ORD-000008 of u-1001: 41,764 cents, nothing refunded yet.
ORDER = "ORD-000008"


def test_a_refund_far_above_the_order_is_refused_before_an_approval_is_asked(demo):
    # when: a billion cents, above the approval threshold too
    body = demo.invoke("refund_payment", {"order_id": ORDER, "amount_cents": 1_000_000_000})

    # then
    assert (body["status"], body["kind"], body["recoverable"]) == ("error", "business_rule", True), body
    assert "41764 cents of order ORD-000008 are left to refund" in body["message"]
    assert "41764" in body["hint"]
    assert not Approval.objects.exists()
    assert not LedgerEntry.objects.exists()
    assert not DemoRefund.objects.exists()


def test_a_dry_run_says_the_rule_would_refuse(demo):
    # when
    body = demo.invoke("refund_payment", {"order_id": ORDER, "amount_cents": 1_000_000_000}, dry_run=True)

    # then
    assert body["kind"] == "business_rule"
    assert not LedgerEntry.objects.exists()


def test_another_users_order_is_left_to_the_provider_and_looks_missing(demo):
    # given: an order of u-2002; the rule reads nothing of it, so the answer is the
    # provider's not_found, as for an order that does not exist
    foreign_id = an_order("u-2002").order_id
    foreign = demo.invoke("refund_payment", {"order_id": foreign_id, "amount_cents": 10}, call_id="f")
    missing = demo.invoke("refund_payment", {"order_id": "ORD-999999", "amount_cents": 10}, call_id="m")

    # then
    assert foreign["kind"] == missing["kind"] == "not_found"
    assert not DemoRefund.objects.exists()


def test_the_refund_reader_reads_the_session_users_orders_only(db):
    # given: an order of u-1001 with 5,000 cents, and calls of another user or with none
    order = DemoOrderFactory(user_id="u-1001", amount_cents=5_000)
    of_owner = make_context(session=SessionClaims(tenant_id=1, agent_id=1, subject="u-1001"))
    of_other = make_context(session=SessionClaims(tenant_id=1, agent_id=1, subject="u-2002"))
    arguments = {"order_id": order.order_id, "user_id": "u-1001"}

    # when
    owner_sees = refundable_cents(arguments, of_owner)
    other_sees = refundable_cents(arguments, of_other)

    # then: a user_id in the arguments does not let another user's call read the order
    assert owner_sees is not None and owner_sees.maximum == 5_000
    assert other_sees is None
    assert refundable_cents({"user_id": "u-1001"}, of_owner) is None
