"""A map's values cast as its schema says, for openapi-core's validator.

Form and query values arrive as text, and openapi-core casts them by the schema before it
validates. Its ObjectCaster (0.19–0.23) means to cast an object's additional properties too,
but skips every one of them (`if prop_name in value: continue` holds for each key), so a
map's integers stay text: Stripe's `currency_options[eur][amount]=913` would be found
invalid ("'913' is not of type 'integer'") whatever ToolHub sent.
"""

from __future__ import annotations

from typing import Any

from openapi_core.casting.schemas.casters import ObjectCaster, TypesCaster
from openapi_core.casting.schemas.factories import SchemaCastersFactory
from openapi_core.schema.schemas import get_properties


class MapCastingObjectCaster(ObjectCaster):
    """ObjectCaster that also casts the values of the keys its properties do not name."""

    def _cast_proparties(self, value: dict[str, Any], schema_only: bool = False) -> dict[str, Any]:
        value = super()._cast_proparties(value, schema_only=schema_only)
        additional = self.schema.get("additionalProperties", True)
        if schema_only or isinstance(additional, bool):
            return value
        caster = self.schema_caster.evolve(self.schema / "additionalProperties")
        named = set(get_properties(self.schema))
        return {key: item if key in named else caster.cast(item) for key, item in value.items()}


def casting_maps(factory: SchemaCastersFactory) -> SchemaCastersFactory:
    """`factory` with objects cast by MapCastingObjectCaster."""
    types = factory.types_caster
    return SchemaCastersFactory(
        factory.schema_validators_factory,
        TypesCaster({**types.casters, "object": MapCastingObjectCaster}, types.default, types.multi),
    )
