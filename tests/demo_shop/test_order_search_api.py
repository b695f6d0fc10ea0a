import pytest

from apps.demo_shop.seed import demo_seed

pytestmark = pytest.mark.django_db


def test_the_ungoverned_search_returns_the_same_orders_as_the_tool(client):
    demo_seed()

    response = client.get(
        "/demo/orders/search",
        {
            "user_id": "u-1001",
            "status": "paid",
            "start_date": "2026-01-01",
            "end_date": "2026-03-31",
            "limit": 5,
        },
    )

    assert response.status_code == 200
    orders = response.json()
    assert 0 < len(orders) <= 5 and all(o["status"] == "paid" for o in orders)


def test_bad_parameters_get_an_error_envelope(client):
    response = client.get("/demo/orders/search", {"user_id": "u-1001", "status": "nope"})

    assert response.status_code == 400 and response.json()["kind"] == "invalid_args"
