"""The executor kinds a version may name, and how the catalog checks each one's config.

The executors are the gateway's (apps/gateway/executors/, one package per kind), but the
catalog, below the gateway in the layers, must list the kinds (the version's `executor`
field, the admin's dropdown) and check a version's `executor_config` on save. So each
executor package declares its kind here when the gateway app is ready, and the catalog
reads the declarations: a new kind needs no change, and no migration, in the catalog.
Common imports no app.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol


class ConfigProblems(Protocol):
    def __call__(self, *, executor_config: Mapping[str, Any], parameters: Mapping[str, Any]) -> list[str]:
        """How a config, already valid against the kind's schema, disagrees with the version's
        (valid) parameters schema: one sentence per problem, for the curator."""


@dataclass(frozen=True)
class ExecutorKindDeclaration:
    """What the catalog knows of one executor kind."""

    kind: str
    label: str
    # JSON Schema (Draft 2020-12) of a version's executor_config of this kind.
    config_schema: Mapping[str, Any]
    # The checks of the config against the parameters, beyond the schema; none by default.
    config_problems: ConfigProblems | None = None
    # The config key that gives a write a reconcile path, and how a lint hint says so.
    reconcile_key: str = ""
    reconcile_how: str = ""
    # Config keys that name a platform setting (a secret, a URL): only shared tools may use them.
    platform_setting_keys: tuple[str, ...] = field(default=())


# The kind of code runs' versions (run_python): the gateway's sandbox executor registers it,
# the gateway derives such versions from the tools beside them, the ledger's admin lists runs.
CODE_RUN_KIND = "sandbox"

_KINDS: dict[str, ExecutorKindDeclaration] = {}


def register_executor_kind(declaration: ExecutorKindDeclaration) -> None:
    """Declare (or declare again, replacing) the kind `declaration.kind`."""
    _KINDS[declaration.kind] = declaration


def executor_kind(kind: str) -> ExecutorKindDeclaration | None:
    """The declaration of `kind`; None when no executor of that kind is installed."""
    return _KINDS.get(kind)


def executor_kinds() -> tuple[ExecutorKindDeclaration, ...]:
    """Every declared kind, by name."""
    return tuple(_KINDS[kind] for kind in sorted(_KINDS))


def executor_kind_choices() -> list[tuple[str, str]]:
    """The `choices` of a version's `executor` field: a callable, so a new kind needs no migration."""
    return [(declared.kind, declared.label) for declared in executor_kinds()]
