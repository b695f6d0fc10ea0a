"""The egress policy's matching, without a network: patterns, address categories, strict mode."""

from __future__ import annotations

import ipaddress

import pytest
from django.core.exceptions import ImproperlyConfigured

from apps.common.egress import EgressPolicy, address_category, parse_pattern


def _policy(*patterns: str, public: bool = True) -> EgressPolicy:
    return EgressPolicy(allow=tuple(parse_pattern(p) for p in patterns), public=public)


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("127.0.0.1", "loopback"),
        ("127.8.9.10", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "unspecified (it reaches this machine)"),
        ("10.0.0.1", "private"),
        ("172.16.5.4", "private"),
        ("192.168.1.1", "private"),
        ("169.254.10.10", "link-local"),
        ("fe80::1", "link-local"),
        ("fd12:3456::1", "unique-local"),
        ("169.254.169.254", "cloud metadata"),
        ("fd00:ec2::254", "cloud metadata"),
        ("100.64.0.1", "reserved"),
        ("224.0.0.1", "multicast"),
        ("93.184.216.34", None),
        ("2606:2800:220:1:248:1893:25c8:1946", None),
    ],
)
def test_addresses_are_classed_by_what_they_reach(address, category):
    assert address_category(ipaddress.ip_address(address)) == category


@pytest.mark.parametrize(
    ("pattern", "host", "port", "matches"),
    [
        ("api.example.com", "api.example.com", 443, True),
        ("api.example.com", "API.Example.com.", 80, True),
        ("api.example.com", "api.example.com", 8443, False),
        ("api.example.com", "evil-api.example.com", 443, False),
        ("*.corp.example:8443", "pay.corp.example", 8443, True),
        ("*.corp.example:8443", "a.b.corp.example", 8443, True),
        ("*.corp.example:8443", "corp.example", 8443, False),
        ("*.corp.example:8443", "pay.corp.example", 443, False),
        ("*.corp.example:8443", "corp.example.evil.com", 8443, False),
        ("127.0.0.1:*", "127.0.0.1", 8792, True),
        ("127.0.0.1:*", "127.0.0.2", 8792, False),
        ("[::1]:8080", "::1", 8080, True),
        ("::1", "0:0:0:0:0:0:0:1", 443, True),
        ("10.0.0.5:9000", "10.0.0.5", 9000, True),
    ],
)
def test_patterns_match_host_and_port(pattern, host, port, matches):
    assert parse_pattern(pattern).matches(host.lower().rstrip("."), port) is matches


@pytest.mark.parametrize(
    "pattern", ["*", "*:443", "api.*.example", "host:0", "host:70000", "host:http", ":80"]
)
def test_a_pattern_that_means_nothing_is_a_configuration_error(pattern):
    with pytest.raises(ImproperlyConfigured, match="TOOLHUB_EGRESS_ALLOW"):
        parse_pattern(pattern)


def test_non_public_destinations_are_refused_unless_allowed():
    policy = _policy("127.0.0.1:8000", "*.corp.example")

    assert "loopback" in policy.refusal("127.0.0.1", 8792)
    assert policy.refusal("127.0.0.1", 8000) is None
    assert policy.refusal("localhost", 8000, ipaddress.ip_address("127.0.0.1")) is None  # by address
    assert policy.refusal("pay.corp.example", 443, ipaddress.ip_address("10.2.3.4")) is None
    assert "private" in policy.refusal("pay.corp.example", 8443, ipaddress.ip_address("10.2.3.4"))
    assert "private" in policy.refusal("rebind.example", 443, ipaddress.ip_address("10.2.3.4"))
    assert policy.refusal("api.example.com", 443, ipaddress.ip_address("93.184.216.34")) is None


def test_the_metadata_service_is_reached_only_by_a_pattern_naming_it_exactly():
    metadata = ipaddress.ip_address("169.254.169.254")

    assert "cloud metadata" in _policy("*.corp.example").refusal("x.corp.example", 80, metadata)
    assert _policy("169.254.169.254").refusal("169.254.169.254", 80) is None


def test_strict_mode_refuses_public_hosts_it_does_not_name():
    policy = _policy("api.example.com", public=False)
    public = ipaddress.ip_address("93.184.216.34")

    assert policy.refusal("api.example.com", 443, public) is None
    assert "TOOLHUB_EGRESS_PUBLIC is false" in policy.refusal("other.example.com", 443, public)
    assert "TOOLHUB_EGRESS_PUBLIC is false" in policy.refusal("other.example.com", 443)


@pytest.mark.parametrize(
    ("url", "refused"),
    [
        ("https://api.example.com/v1", None),
        ("http://127.0.0.1:8000/demo/payments", "loopback"),
        ("http://localhost:8000", "loopback"),
        ("http://app.localhost", "loopback"),
        ("http://metadata.google.internal/computeMetadata/v1", "cloud metadata"),
        ("http://[::ffff:169.254.169.254]/", "cloud metadata"),
        ("http://0.0.0.0:8000", "unspecified"),
        ("ftp://api.example.com", "not an http(s) URL"),
        ("http://api.example.com:99999", "not a valid URL"),
    ],
)
def test_a_url_is_judged_as_written_without_dns(url, refused):
    refusal = _policy().url_refusal(url)

    assert (refusal is None) if refused is None else (refused in refusal)
