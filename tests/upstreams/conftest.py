"""Two tenants, their staff, and agents with keys, for the upstreams tests."""

from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import Permission, User
from django.test import Client
from rest_framework.test import APIClient

from apps.tenancy.models import StaffScope, Tenant
from apps.tenancy.services import agent_key_issue
from tests.factories import AgentFactory, TenantFactory


@pytest.fixture
def acme(db) -> Tenant:
    return TenantFactory(slug="acme")


@pytest.fixture
def globex(db) -> Tenant:
    return TenantFactory(slug="globex")


def staff_client(username: str, tenant: Tenant | None) -> Client:
    """A logged-in staff user holding the upstreams app's permissions, scoped to `tenant`."""
    user = User.objects.create_user(username=username, password="pw", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(content_type__app_label="upstreams"))
    if tenant is not None:
        StaffScope.objects.create(user=user, tenant=tenant)
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def acme_staff(acme) -> Client:
    return staff_client("acme-staff", acme)


@pytest.fixture
def superuser(db) -> Client:
    client = Client()
    client.force_login(User.objects.create_superuser(username="root", password="pw"))
    return client


def agent_api(tenant: Tenant) -> APIClient:
    client = APIClient()
    key = agent_key_issue(agent=AgentFactory(tenant=tenant, name=f"{tenant.slug}-bot")).secret
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {key}")
    return client


@pytest.fixture
def acme_api(acme) -> APIClient:
    return agent_api(acme)


@pytest.fixture
def globex_api(globex) -> APIClient:
    return agent_api(globex)


@pytest.fixture
def fernet_keys() -> list[str]:
    """Three fresh Fernet keys, oldest first."""
    return [Fernet.generate_key().decode() for _ in range(3)]
