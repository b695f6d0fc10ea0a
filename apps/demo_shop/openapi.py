"""The demo payments provider described as a third party would: an OpenAPI 3.1 document,
served at /demo/openapi.json and imported by `seed_demo` through the OpenAPI importer.

Data only. It describes the provider's public contract (views.py): the refunds it records
and lists. The `user_id` the provider also accepts is ToolHub's own extra (the session's
subject, bound by the seeded refund_payment tool), so it is not part of the document.
"""

from __future__ import annotations

from typing import Any

from .tool_definitions import ORDER_ID_PATTERN

# The operation seed_demo imports: a GET with a path parameter.
LIST_ORDER_REFUNDS = "listOrderRefunds"
MAX_LISTED_REFUNDS = 100

_ERROR_RESPONSE = {"description": "A refusal, in the provider's error format.",
                   "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}


def payments_openapi(*, server_url: str) -> dict[str, Any]:
    """The document, with `server_url` (the provider's base URL) as its server."""
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Demo payments provider",
            "version": "1.0.0",
            "description": "Refunds of the demo shop's orders. Every request needs "
            "'Authorization: Bearer <API key>'.",
        },
        "servers": [{"url": server_url}],
        "security": [{"apiKey": []}],
        "paths": {
            "/refunds": {
                "post": {
                    "operationId": "createRefund",
                    "summary": "Records a refund of an order, once per Idempotency-Key.",
                    "description": "Refunds amount_cents of an order, at most what is left to refund of "
                    "it (its amount less earlier refunds). A replay of a key answers the first refund; "
                    "the same key with another order or amount is refused. Do not retry with a new key "
                    "after a timeout: look the refund up by its key instead.",
                    "parameters": [{"$ref": "#/components/parameters/IdempotencyKey"}],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {"schema": {"$ref": "#/components/schemas/NewRefund"}},
                        },
                    },
                    "responses": {
                        "201": {"description": "Recorded.", "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Refund"}}}},
                        "200": {"description": "A replay: the refund first recorded with this key."},
                        "404": _ERROR_RESPONSE, "409": _ERROR_RESPONSE, "422": _ERROR_RESPONSE,
                    },
                },
                "get": {
                    "operationId": "getRefundByKey",
                    "summary": "The refund recorded with an idempotency key.",
                    "description": "Looks up the one refund recorded with this key; only to check the "
                    "outcome of a refund whose answer was lost. Not for listing refunds (use "
                    f"{LIST_ORDER_REFUNDS}).",
                    "parameters": [{
                        "name": "idempotency_key", "in": "query", "required": True,
                        "description": "The Idempotency-Key the refund was requested with.",
                        "schema": {"type": "string", "minLength": 1, "maxLength": 600},
                    }],
                    "responses": {
                        "200": {"description": "The refund.", "content": {"application/json": {
                            "schema": {"$ref": "#/components/schemas/Refund"}}}},
                        "404": _ERROR_RESPONSE,
                    },
                },
            },
            "/orders/{order_id}/refunds": {
                "get": {
                    "operationId": LIST_ORDER_REFUNDS,
                    "summary": "Lists the refunds of one order.",
                    "description": "Lists the refunds recorded for one order, oldest first, at most "
                    f"{MAX_LISTED_REFUNDS}: id, amount in cents and when. An order without refunds "
                    "answers an empty list. Do not use it to refund an order (use createRefund).",
                    "parameters": [{"$ref": "#/components/parameters/OrderId"}],
                    "responses": {
                        "200": {"description": "The order's refunds.", "content": {"application/json": {
                            "schema": {"type": "array", "items": {"$ref": "#/components/schemas/Refund"}}}}},
                        "404": _ERROR_RESPONSE,
                    },
                },
            },
        },
        "components": {
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
            "parameters": {
                "OrderId": {
                    "name": "order_id", "in": "path", "required": True,
                    "description": "The order id as shown to the user: ORD- and six digits, e.g. ORD-000042.",
                    "schema": {"type": "string", "pattern": ORDER_ID_PATTERN},
                },
                "IdempotencyKey": {
                    "name": "Idempotency-Key", "in": "header", "required": True,
                    "description": "One key per refund you intend; a replay answers the first refund.",
                    "schema": {"type": "string", "maxLength": 600},
                },
            },
            "schemas": {
                "NewRefund": {
                    "type": "object",
                    "required": ["order_id", "amount_cents"],
                    "properties": {
                        "order_id": {"type": "string", "pattern": ORDER_ID_PATTERN,
                                     "description": "The order to refund: ORD- and six digits."},
                        "amount_cents": {"type": "integer", "minimum": 1,
                                         "description": "Amount to refund in cents, at least 1."},
                    },
                },
                "Refund": {
                    "type": "object",
                    "properties": {
                        "refund_id": {"type": "string", "readOnly": True},
                        "order_id": {"type": "string", "pattern": ORDER_ID_PATTERN},
                        "amount_cents": {"type": "integer"},
                        "idempotency_key": {"type": "string"},
                        "created_at": {"type": "string", "format": "date-time"},
                    },
                },
                "Error": {
                    "type": "object",
                    "properties": {"error": {"type": "object", "properties": {
                        "code": {"type": "string"}, "message": {"type": "string"}}}},
                },
            },
        },
    }
