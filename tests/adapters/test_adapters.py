"""The vendor adapters: an assistant message in (as the vendor's SDK builds it), the answer out
(as the vendor's SDK accepts it), through the batch path."""

from __future__ import annotations

import json

import pytest
from anthropic.types import Message, MessageParam, TextBlock, ToolResultBlockParam, ToolUseBlock, Usage
from openai.types.chat import (
    ChatCompletionAssistantMessageParam,
    ChatCompletionMessage,
    ChatCompletionMessageFunctionToolCall,
    ChatCompletionToolMessageParam,
)
from openai.types.chat.chat_completion_message_function_tool_call import Function
from pydantic import TypeAdapter

from apps.ledger.models import LedgerEntry

SEARCH = {"status": "paid", "start_date": "2026-01-01", "end_date": "2026-01-31", "limit": 20}
CANCEL = {"order_id": "ORD-000042", "reason": "customer_request"}


def openai_message(*calls: tuple[str, str, dict | str]) -> ChatCompletionMessage:
    """What the Chat Completions API answers when the model calls tools."""
    return ChatCompletionMessage(
        role="assistant",
        content=None,
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id=call_id,
                type="function",
                function=Function(name=name, arguments=args if isinstance(args, str) else json.dumps(args)),
            )
            for call_id, name, args in calls
        ],
    )


def anthropic_message(*uses: tuple[str, str, dict]) -> Message:
    """What the Messages API answers when the model uses tools."""
    return Message(
        id="msg_1",
        type="message",
        role="assistant",
        model="claude-sonnet-4-5",
        content=[
            TextBlock(type="text", text="Let me check that."),
            *[ToolUseBlock(type="tool_use", id=use_id, name=name, input=args) for use_id, name, args in uses],
        ],
        stop_reason="tool_use",
        stop_sequence=None,
        usage=Usage(input_tokens=10, output_tokens=20),
    )


def post_openai(api, message: ChatCompletionMessage, session=None, **extra):
    wire = message.model_dump(mode="json", exclude_none=True)
    TypeAdapter(ChatCompletionAssistantMessageParam).validate_python(wire)
    headers = {"HTTP_X_TOOLHUB_SESSION": session} if session else {}
    body = {"task_id": "t-openai", "message": wire, **extra}
    return api.post("/api/v1/adapters/openai", body, format="json", **headers)


def post_anthropic(api, message: Message, session=None, **extra):
    # An agent loop appends the assistant turn as {"role", "content"}; the adapter takes it so.
    wire = {"role": message.role, "content": [block.model_dump(mode="json") for block in message.content]}
    TypeAdapter(MessageParam).validate_python(wire)
    headers = {"HTTP_X_TOOLHUB_SESSION": session} if session else {}
    body = {"task_id": "t-anthropic", "message": wire, **extra}
    return api.post("/api/v1/adapters/anthropic", body, format="json", **headers)


@pytest.mark.django_db(transaction=True)
def test_openai_tool_calls_come_back_as_tool_messages_in_order(api, demo_tools, session_for):
    message = openai_message(
        ("call_s", "search_orders", SEARCH),
        ("call_c", "cancel_order", CANCEL),
        ("call_x", "export_orders_csv", {}),
        ("call_g", "get_order", '{"order_id": "42"'),
    )

    response = post_openai(api, message, session=session_for("u-1001"))

    assert response.status_code == 200
    messages = response.json()["messages"]
    for tool_message in messages:
        TypeAdapter(ChatCompletionToolMessageParam).validate_python(tool_message)
        assert set(tool_message) == {"role", "tool_call_id", "content"}
    assert [m["tool_call_id"] for m in messages] == ["call_s", "call_c", "call_x", "call_g"]
    envelopes = [json.loads(m["content"]) for m in messages]
    assert [(e["call_id"], e["status"], e.get("kind")) for e in envelopes] == [
        ("call_s", "ok", None),
        ("call_c", "ok", None),
        ("call_x", "error", "unknown_tool"),
        ("call_g", "error", "invalid_json"),
    ]
    assert envelopes[0]["data"] == {"echo": {**SEARCH, "user_id": "u-1001"}}
    # The write went through the ledger, as on the batch path.
    assert LedgerEntry.objects.get().key.startswith("acme/t-openai/call_c/cancel_order/")


@pytest.mark.django_db
def test_openai_adapter_shares_the_batch_budget(api, publish_tool):
    items = {
        "type": "object",
        "properties": {"count": {"type": "integer"}},
        "required": ["count"],
        "additionalProperties": False,
    }
    publish_tool(
        "list_items", parameters=items, context_bindings={}, executor_config={"callable": "tests.items"}
    )
    message = openai_message(("a", "list_items", {"count": 60}), ("b", "list_items", {"count": 60}))

    envelopes = [
        json.loads(m["content"]) for m in post_openai(api, message, budget_chars=1000).json()["messages"]
    ]

    assert all(e["status"] == "ok" and e["truncated"]["total"] == 60 for e in envelopes)
    assert sum(len(json.dumps(e["data"])) for e in envelopes) < 2000


@pytest.mark.django_db
def test_openai_message_without_tool_calls_is_a_400(api):
    text_only = ChatCompletionMessage(role="assistant", content="Your order shipped.")

    response = post_openai(api, text_only)

    assert response.status_code == 400
    assert response.json()["details"] == [
        {"path": "/message/tool_calls", "problem": "The message has no tool calls: there is nothing to run."}
    ]


@pytest.mark.django_db
def test_repeated_tool_call_ids_are_a_400(api, demo_tools):
    message = openai_message(
        ("same", "search_orders", SEARCH), ("same", "get_order", {"order_id": "ORD-000001"})
    )

    response = post_openai(api, message)

    assert response.status_code == 400
    assert "repeated: same" in response.json()["details"][0]["problem"]


@pytest.mark.django_db
def test_anthropic_tool_use_blocks_come_back_as_one_user_message_of_tool_results(
    api, demo_tools, session_for
):
    message = anthropic_message(
        ("toolu_1", "search_orders", SEARCH),
        ("toolu_2", "search_orders", {**SEARCH, "status": "not cancelled"}),
        ("toolu_3", "cancel_order", CANCEL),
    )

    response = post_anthropic(api, message, session=session_for("u-1001"), toolset="support", phase="lookup")

    assert response.status_code == 200
    answer = response.json()
    TypeAdapter(MessageParam).validate_python(answer)
    assert answer["role"] == "user"
    for block in answer["content"]:
        TypeAdapter(ToolResultBlockParam).validate_python(block)
        assert set(block) == {"type", "tool_use_id", "content", "is_error"}
    assert [(b["tool_use_id"], b["is_error"]) for b in answer["content"]] == [
        ("toolu_1", False),
        ("toolu_2", True),
        ("toolu_3", True),
    ]
    envelopes = [json.loads(b["content"]) for b in answer["content"]]
    assert envelopes[0]["data"]["echo"]["user_id"] == "u-1001"
    assert envelopes[1]["kind"] == "invalid_args" and "pending, paid, cancelled, all" in envelopes[1]["hint"]
    # cancel_order is not in the lookup phase: the model is told to use what it has.
    assert envelopes[2]["kind"] == "unknown_tool" and "request_capability" in envelopes[2]["hint"]


@pytest.mark.django_db
def test_anthropic_message_without_tool_use_is_a_400(api):
    response = post_anthropic(api, anthropic_message())

    assert response.status_code == 400
    assert response.json()["details"] == [
        {
            "path": "/message/content",
            "problem": "The message has no tool_use blocks: there is nothing to run.",
        }
    ]


@pytest.mark.django_db
def test_adapters_need_the_agent_key(client):
    response = client.post("/api/v1/adapters/anthropic", {}, content_type="application/json")

    assert response.status_code == 401
