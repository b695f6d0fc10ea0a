"""The `http` kind: a call becomes one request to the version's upstream API.

What its executor_config may say is the catalog's http declaration (apps/catalog/http_config.py
and definitions.http_mapping_problems); this package hands it to the registry.
"""

from __future__ import annotations

from apps.catalog.definitions import PLATFORM_SETTING_KEYS, http_mapping_problems
from apps.catalog.http_config import HTTP_CONFIG_SCHEMA

from ..registry import Executor, register
from .executor import reconcile_http, run_http

EXECUTOR = register(
    Executor(
        kind="http",
        label="HTTP",
        run=run_http,
        reconcile=reconcile_http,
        # The request mapping of docs/contract.md §5: where the call goes (exactly one of url,
        # url_setting, upstream) and how the arguments become a request.
        config_schema=HTTP_CONFIG_SCHEMA,
        config_problems=http_mapping_problems,
        reconcile_key="status_path",
        reconcile_how='a "status_path" in executor_config (the upstream\'s status endpoint by '
                      "idempotency key)",
        platform_setting_keys=PLATFORM_SETTING_KEYS,
    )
)
