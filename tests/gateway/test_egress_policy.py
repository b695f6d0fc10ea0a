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


# IPv6 forms that carry an IPv4 address reach that address (through a NAT64 gateway, a 6to4
# or Teredo relay, or a stack that still honours the deprecated forms): each is judged by it.
EMBEDDED_IPV4 = [
    ("64:ff9b::a9fe:a9fe", "cloud metadata", "169.254.169.254 in NAT64 form"),
    ("64:ff9b::7f00:1", "loopback", "127.0.0.1 in NAT64 form"),
    ("64:ff9b::a00:1", "private", "10.0.0.1 in NAT64 form"),
    ("::127.0.0.1", "loopback", "127.0.0.1 in IPv4-compatible form"),
    ("::10.0.0.1", "private", "10.0.0.1 in IPv4-compatible form"),
    ("::169.254.169.254", "cloud metadata", "169.254.169.254 in IPv4-compatible form"),
    ("2002:a9fe:a9fe::1", "cloud metadata", "169.254.169.254 in 6to4 form"),
    ("2002:7f00:1::", "loopback", "127.0.0.1 in 6to4 form"),
    ("2002:c0a8:101:5::1", "private", "192.168.1.1 in 6to4 form"),
    ("::ffff:0:a9fe:a9fe", "cloud metadata", "169.254.169.254 in IPv4-translated form"),
    ("::ffff:0:7f00:1", "loopback", "127.0.0.1 in IPv4-translated form"),
    ("::ffff:a9fe:a9fe", "cloud metadata", "169.254.169.254 in IPv4-mapped form"),
    # Teredo: server 65.54.227.120, client 127.0.0.1 / 169.254.169.254 (the last 32 bits, inverted)
    ("2001:0:4136:e378:8000:63bf:80ff:fffe", "loopback", "127.0.0.1 in Teredo form"),
    ("2001:0:4136:e378:8000:63bf:5601:5601", "cloud metadata", "169.254.169.254 in Teredo form"),
]


@pytest.mark.parametrize(("address", "category", "embedding"), EMBEDDED_IPV4)
def test_an_ipv6_address_that_embeds_ipv4_is_classed_by_the_ipv4_address(address, category, embedding):
    assert address_category(ipaddress.ip_address(address)) == category


@pytest.mark.parametrize(("address", "category", "embedding"), EMBEDDED_IPV4)
def test_a_refused_embedded_address_says_which_ipv4_address_it_reaches(address, category, embedding):
    refusal = _policy().refusal("api.example.com", 443, ipaddress.ip_address(address))

    assert refusal is not None and f"is a {category} address ({embedding})" in refusal


@pytest.mark.parametrize(
    ("address", "category"),
    [
        ("64:ff9b:1::1", "NAT64 local-use"),  # RFC 8215: the IPv4 address's place is the network's choice
        ("64:ff9b:1:a9fe:a900:fe00::", "NAT64 local-use"),
        ("fec0::1", "site-local"),  # deprecated by RFC 3879, still routed inside some networks
        ("feff:ffff::1", "site-local"),
    ],
)
def test_local_use_nat64_and_site_local_ranges_are_refused_whatever_they_hold(address, category):
    assert address_category(ipaddress.ip_address(address)) == category


@pytest.mark.parametrize(
    "address",
    [
        "64:ff9b::808:808",  # NAT64 of 8.8.8.8: how an IPv6-only network reaches a public host
        "2002:808:808::1",  # 6to4 of 8.8.8.8
        "::ffff:0:808:808",
        "::8.8.8.8",
        "::ffff:8.8.8.8",
    ],
)
def test_an_embedded_public_ipv4_address_stays_public(address):
    assert address_category(ipaddress.ip_address(address)) is None


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
        ("http://[64:ff9b::a9fe:a9fe]/", "cloud metadata"),
        ("http://[2002:a9fe:a9fe::1]/", "cloud metadata"),
        ("http://[fec0::1]/", "site-local"),
        ("http://0.0.0.0:8000", "unspecified"),
        ("ftp://api.example.com", "not an http(s) URL"),
        ("http://api.example.com:99999", "not a valid URL"),
    ],
)
def test_a_url_is_judged_as_written_without_dns(url, refused):
    refusal = _policy().url_refusal(url)

    assert (refusal is None) if refused is None else (refused in refusal)
