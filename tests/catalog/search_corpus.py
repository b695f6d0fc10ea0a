"""The corpus of tool search (apps/catalog/tool_search.py): requests a model might send to
request_capability, in words other than the tools' own, each with the tool it should find.

The tools are the demo shop's (apps/demo_shop: orders, payments, shipping, code mode) and a
few of our own described in Chinese, asked for in Chinese.
"""

from __future__ import annotations

from typing import Any

# Tools described in Chinese, named in pinyin (tool names are ASCII snake_case).
CHINESE_TOOLS: dict[str, dict[str, Any]] = {
    "dingdan_chaxun": {
        "description": "按订单号查询当前用户的一个订单：订单状态、金额、币种和下单日期。每次只查一个订单。"
        "不要用它修改订单。",
        "parameters": {"type": "object", "properties": {
            "order_no": {"type": "string", "description": "订单号，例如 ORD-000042。"}}},
    },
    "tuikuan": {
        "description": "为当前用户的订单退款：把钱退回原支付方式，金额以分为单位，最多为订单尚未退款的部分。"
        "超过 450 元的退款需要人工审批。不要用它取消订单。",
        "parameters": {"type": "object", "properties": {
            "order_no": {"type": "string", "description": "订单号。"},
            "amount_fen": {"type": "integer", "description": "退款金额（分）。"}}},
    },
    "wuliu_genzong": {
        "description": "物流跟踪：查询一个包裹的运输状态、快递公司、最后扫描的地点和预计送达日期。"
        "不会改变任何东西。",
        "parameters": {"type": "object", "properties": {
            "tracking_no": {"type": "string", "description": "快递单号。"}}},
    },
    "fapiao_kaiju": {
        "description": "为已付款的订单开具电子发票，并发送到用户的邮箱。每个订单只能开一次发票。",
        "parameters": {"type": "object", "properties": {
            "order_no": {"type": "string", "description": "订单号。"},
            "title": {"type": "string", "description": "发票抬头：个人姓名或公司名称。"}}},
    },
    "kefu_gongdan": {
        "description": "创建客服工单：记录用户的投诉或问题，转交人工客服处理，并返回工单编号。",
        "parameters": {"type": "object", "properties": {
            "summary": {"type": "string", "description": "问题的简短描述。"}}},
    },
}

# (request, the tool it should find first)
CORPUS: list[tuple[str, str]] = [
    ("list purchases between two dates", "search_orders"),
    ("find all the orders I placed last month", "search_orders"),
    ("browse the order history for a date range", "search_orders"),
    ("orders placed in the last 30 days that are still pending", "search_orders"),
    ("look up one order by its number", "get_order"),
    ("what is the status of order ORD-000042", "get_order"),
    ("fetch the details of a single order", "get_order"),
    ("cancel a purchase", "cancel_order"),
    ("void an order the customer asked to drop", "cancel_order"),
    ("abort an order that was placed by mistake", "cancel_order"),
    ("give the customer money back", "refund_payment"),
    ("reimburse the buyer for a damaged item", "refund_payment"),
    ("pay back part of what the customer paid", "refund_payment"),
    ("where is my parcel", "track_shipment"),
    ("has my package been delivered yet", "track_shipment"),
    ("locate a delivery in transit", "track_shipment"),
    ("book a courier to collect a package", "schedule_pickup"),
    ("arrange for the carrier to pick up a shipment tomorrow morning", "schedule_pickup"),
    ("reserve a collection slot for a parcel", "schedule_pickup"),
    ("did my pickup request go through", "pickup_status"),
    ("check whether a pickup was booked with this idempotency key", "pickup_status"),
    ("execute a script that totals many orders", "run_python"),
    ("run code to count orders over a whole year", "run_python"),
    ("combine the results of many calls in one program", "run_python"),
    ("帮我查一下这个订单的状态", "dingdan_chaxun"),
    ("我要退款", "tuikuan"),
    ("把钱退回到原来的支付方式", "tuikuan"),
    ("我的包裹到哪里了", "wuliu_genzong"),
    ("快递什么时候能送到", "wuliu_genzong"),
    ("请给我开一张发票", "fapiao_kaiju"),
    ("我要投诉，转人工客服", "kefu_gongdan"),
]

# Requests no tool of the corpus does.
NOTHING_DOES: list[str] = [
    "translate a poem into French",
    "what is the weather in Paris tomorrow",
    "把这首诗翻译成法语",
    "translate the order confirmation into French",
    "send the customer a birthday card",
]
