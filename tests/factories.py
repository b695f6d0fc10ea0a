"""factory_boy factories shared by the whole suite."""

import factory

from apps.catalog.models import Tool, ToolVersion
from apps.tenancy.models import Agent, Grant, Tenant

SIMPLE_SCHEMA = {
    "type": "object",
    "properties": {"query": {"type": "string", "description": "What to look for."}},
    "required": ["query"],
    "additionalProperties": False,
}


class TenantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tenant
        django_get_or_create = ("slug",)

    slug = factory.Sequence(lambda n: f"tenant-{n}")
    name = factory.LazyAttribute(lambda o: o.slug.title())


class AgentFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Agent

    tenant = factory.SubFactory(TenantFactory)
    name = factory.Sequence(lambda n: f"agent-{n}")


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tool

    name = factory.Sequence(lambda n: f"tool_{n}")


class ToolVersionFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = ToolVersion

    tool = factory.SubFactory(ToolFactory)
    number = factory.Sequence(lambda n: n + 1)
    description = "Finds things. At most 20 results. Do not use it to change anything."
    parameters = factory.LazyFunction(lambda: dict(SIMPLE_SCHEMA))
    side_effect = "readonly"
    executor = "python"
    executor_config = factory.LazyFunction(lambda: {"callable": "tests.echo"})


class GrantFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Grant

    tenant = factory.SubFactory(TenantFactory)
    tool = factory.SubFactory(ToolFactory)
