"""The shop's own order API, ungoverned: the baselines `make bench` compares invoke with.

Each endpoint does what one demo tool does, through DRF, with no agent key, no session, no
validation pipeline and no ledger: what a plain internal API would cost. The search runs
the same query as `search_orders`; the cancel makes the same write as `cancel_order`
(`order_cancel`), behind the shop's own API key since it changes data.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.common.errors import BusinessRuleError, ForbiddenError, NotFoundError
from apps.demo_shop.api_keys import demo_api_key_matches
from apps.demo_shop.selectors import order_list_for_user
from apps.demo_shop.services import order_cancel
from apps.demo_shop.tool_definitions import CANCEL_ORDER, ORDER_ID_PATTERN
from apps.demo_shop.tools import order_as_dict

CANCEL_REASONS = CANCEL_ORDER["parameters"]["properties"]["reason"]["enum"]


class OrderSearchApi(APIView):
    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(serializers.Serializer):
        user_id = serializers.CharField(max_length=32)
        status = serializers.ChoiceField(choices=["pending", "paid", "cancelled", "all"])
        start_date = serializers.DateField()
        end_date = serializers.DateField()
        limit = serializers.IntegerField(min_value=1, max_value=100)

    # The demo shop plays an external system: its endpoints are not part of ToolHub's API.
    @extend_schema(exclude=True)
    def get(self, request: Request) -> Response:
        serializer = self.InputSerializer(data=request.query_params)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        orders = order_list_for_user(
            user_id=data["user_id"], status=data["status"], start=data["start_date"], end=data["end_date"],
            limit=data["limit"],
        )
        return Response([order_as_dict(order) for order in orders])


class OrderCancelApi(APIView):
    """`POST /demo/orders/cancel {"user_id", "order_id", "reason"}`: 200 with the order."""

    authentication_classes: list = []
    permission_classes = [AllowAny]

    class InputSerializer(serializers.Serializer):
        user_id = serializers.CharField(max_length=32)
        order_id = serializers.RegexField(ORDER_ID_PATTERN)
        reason = serializers.ChoiceField(choices=CANCEL_REASONS)

    @extend_schema(exclude=True)
    def post(self, request: Request) -> Response:
        if not demo_api_key_matches(request.headers.get("Authorization", "")):
            error = ForbiddenError(
                "The demo shop's order API needs its API key.",
                hint="Send 'Authorization: Bearer <DEMO_PAYMENTS_API_KEY>'.",
            )
            return Response(error.as_envelope(), status=401)
        serializer = self.InputSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            order = order_cancel(user_id=data["user_id"], order_id=data["order_id"], reason=data["reason"])
        except NotFoundError as exc:
            return Response(exc.as_envelope(), status=404)
        except BusinessRuleError as exc:
            return Response(exc.as_envelope(), status=409)
        return Response(order_as_dict(order))
