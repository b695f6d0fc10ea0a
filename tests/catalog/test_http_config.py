"""An http version's request mapping is checked against its parameters on every save, and
lint says what it would send nowhere. Pure: no database."""

from __future__ import annotations

from typing import Any

import pytest

from apps.catalog.definitions import validate_definition
from apps.catalog.lint import ToolDefinition, lint_tool

PARAMETERS = {
    "type": "object",
    "properties": {
        "order_id": {"type": "string", "description": "The order."},
        "expand": {"type": "array", "items": {"type": "string"}, "description": "What to include."},
        "channel": {"type": "string", "enum": ["web", "app"], "description": "Where from."},
    },
    "required": ["order_id", "expand", "channel"],
    "additionalProperties": False,
}
GOOD = {
    "url": "https://api.example.com",
    "method": "GET",
    "path": "/orders/{order_id}",
    "query": ["expand"],
    "headers": {"X-Channel": "channel"},
    "response_pointer": "/data",
    "idempotency_header": "X-Request-Id",
    "status_path": "/requests/{idempotency_key}",
}


def config_problems(config: dict[str, Any], parameters: dict[str, Any] = PARAMETERS) -> list[str]:
    errors = validate_definition(
        parameters=parameters, normalizers={}, context_bindings={}, rules=[], executor="http",
        executor_config=config, approval={},
    )
    return errors.get("executor_config", [])


def test_a_full_mapping_is_sound():
    assert config_problems(GOOD) == []


def test_the_older_url_setting_config_stays_sound():
    assert config_problems({"url_setting": "PAYMENTS_URL", "path": "/refunds", "status_path": "/refunds",
                            "secret_ref": "PAYMENTS_KEY"}) == []


@pytest.mark.parametrize(
    ("change", "says"),
    [
        pytest.param({"upstream": "orders-api"}, "is valid under each of", id="url and upstream"),
        pytest.param({"url": None}, "is not valid under any of", id="no destination"),
        pytest.param({"method": "get"}, "is not one of ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE']",
                     id="a method outside the set"),
        pytest.param({"path": "/orders/{id}"}, "names id, which the parameters schema does not have",
                     id="a path placeholder without its argument"),
        pytest.param({"path": "/orders/{order_id"}, "has a brace outside", id="an unclosed placeholder"),
        pytest.param({"query": ["expand", "page"]}, "query names page", id="an unknown query argument"),
        pytest.param({"headers": {"X-Page": "page"}}, "headers names page", id="an unknown header argument"),
        pytest.param({"body": ["note"]}, "body names note", id="an unknown body argument"),
        pytest.param({"body": "all"}, "is not valid under any of", id="a body neither rest nor a list"),
        pytest.param({"headers": {"Authorization": "channel"}}, "cannot set Authorization",
                     id="a credential from an argument"),
        pytest.param({"headers": {"x-request-id": "channel"}}, "cannot set x-request-id",
                     id="the idempotency header from an argument"),
        pytest.param({"headers": {"Bad Header": "channel"}}, "does not match",
                     id="a header name with a space"),
        pytest.param({"response_pointer": "data"}, "does not match", id="a pointer without its slash"),
        pytest.param({"status_path": "/requests/{key}"}, "no placeholder but {idempotency_key}",
                     id="a status placeholder other than the key"),
        pytest.param({"idempotency_header": "Authorization"}, "idempotency_header cannot be Authorization",
                     id="the key in the credentials' header"),
    ],
)
def test_a_mapping_that_cannot_work_is_refused_on_save(change, says):
    config = {k: v for k, v in {**GOOD, **change}.items() if v is not None}

    problems = config_problems(config)

    assert any(says in problem for problem in problems), problems


def tool(**config: Any) -> ToolDefinition:
    return ToolDefinition(
        name="list_refunds",
        description="Lists the refunds of an order. At most 20. Do not use it to refund.",
        parameters=PARAMETERS,
        executor="http",
        executor_config={"url": "https://api.example.com", **config},
    )


def mapping_findings(definition: ToolDefinition) -> dict[str, str]:
    codes = {"argument-never-sent", "optional-path-parameter", "body-on-get"}
    return {f.code: f.field for f in lint_tool(definition) if f.code in codes}


def test_a_mapping_that_sends_every_argument_has_no_finding():
    assert mapping_findings(tool(**GOOD)) == {}
    assert mapping_findings(tool(path="/orders/{order_id}")) == {}  # a POST sends the rest


def test_lint_names_the_arguments_a_get_sends_nowhere():
    findings = [f for f in lint_tool(tool(method="GET", path="/orders/{order_id}"))
                if f.code == "argument-never-sent"]

    assert [f.severity for f in findings] == ["warning"]
    assert "channel, expand are in the parameters" in findings[0].why


def test_lint_warns_of_an_optional_path_argument_and_a_body_on_a_get():
    optional = {**PARAMETERS, "required": ["expand", "channel"]}
    definition = ToolDefinition(
        name="list_refunds", description="Lists refunds. At most 20. Do not use it to refund.",
        parameters=optional, strict=False, executor="http",
        executor_config={"url": "https://api.example.com", "method": "GET", "path": "/orders/{order_id}",
                         "body": "rest"},
    )

    assert mapping_findings(definition) == {
        "optional-path-parameter": "parameters/properties/order_id",
        "body-on-get": "executor_config/body",
    }


# A path is pasted after the base URL: anything but added segments under the base's path
# changes where the request goes (and the upstream's credential goes with it).
LEAVING_PATHS = [
    pytest.param(".attacker.example/steal", "does not start with '/'", id="extends the host name"),
    pytest.param("@127.0.0.1:8411/x", "does not start with '/'", id="turns the base into userinfo"),
    pytest.param(":8411/x", "does not start with '/'", id="changes the port"),
    pytest.param("/x/{order_id}/../../admin", "'..' segment", id="climbs with dot segments"),
    pytest.param("/x/./admin", "'.' segment", id="a dot segment"),
    pytest.param("/x/%2e%2E/admin", "'..' segment", id="a percent-encoded dot segment"),
    pytest.param("/x/..%2Fadmin", "'..' segment", id="dots behind an encoded slash"),
    pytest.param("/x\\..\\admin", "holds '\\'", id="backslashes, '/' to some servers"),
    pytest.param("/x#/../../admin", "holds '#'", id="a fragment"),
    pytest.param("/x y\r\nHost: evil", "space or control character", id="a line break"),
]


@pytest.mark.parametrize(("path", "says"), LEAVING_PATHS)
def test_a_path_that_leaves_the_base_url_is_refused_on_save(path, says):
    problems = config_problems({**GOOD, "path": path})

    assert [p for p in problems if p.startswith(f"path {path!r} would leave the upstream's base URL")]
    assert any(says in p for p in problems), problems


@pytest.mark.parametrize(("path", "says"), LEAVING_PATHS)
def test_a_status_path_that_leaves_the_base_url_is_refused_on_save(path, says):
    status_path = path.replace("{order_id}", "{idempotency_key}")

    problems = config_problems({**GOOD, "status_path": status_path})

    refusals = [p for p in problems if p.startswith(f"status_path {status_path!r} would leave")]
    assert any(says in p for p in refusals), problems


@pytest.mark.parametrize(
    "path", ["", "/orders/{order_id}", "/orders/{order_id}.json", "/v1/a%2Fb/{order_id}", "/orders?v=2",
             "?v=2", "/x/.well-known/{order_id}", "/x/...", "/caf\u00e9/{order_id}"],
)
def test_a_path_that_adds_segments_under_the_base_is_sound(path):
    assert config_problems({**GOOD, "path": path}) == []


@pytest.mark.parametrize(("path", "says"), LEAVING_PATHS)
def test_lint_flags_a_stored_path_that_leaves_the_base_url_as_an_error(path, says):
    findings = [f for f in lint_tool(tool(**{**GOOD, "path": path})) if f.code == "path-leaves-base"]

    assert [(f.severity, f.field) for f in findings] == [("error", "executor_config/path")]
    assert says in findings[0].why
