"""The shop's own order search, ungoverned: the baseline `make bench` compares invoke with.

It runs the same query as the `search_orders` tool, through DRF, with no agent key, no
session, no validation pipeline and no ledger: what a plain internal API would cost.
"""

from __future__ import annotations

from drf_spectacular.utils import extend_schema
from rest_framework import serializers
from rest_framework.permissions import AllowAny
from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.views import APIView

from apps.demo_shop.selectors import order_list_for_user
from apps.demo_shop.tools import order_as_dict


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
