"""Latencies as counts in fixed log-scale buckets: a sketch that merges by addition.

Bucket 0 holds latencies under MIN_MS; bucket i ≥ 1 holds [MIN_MS·G^(i-1), MIN_MS·G^i) with
G = 2^(1/8), up to LAST, which also takes everything longer (over 17 minutes: past any
tool's timeout). A bucket stands for its geometric middle, so every latency is read back
within a factor √G ≈ 1.044 (±4.4 %) of itself, and a percentile computed from the counts
the way PostgreSQL's PERCENTILE_CONT computes it from the latencies is within ±4.4 % of
PERCENTILE_CONT's (below MIN_MS, within MIN_MS/2 in absolute terms). Counts of any hours,
tools and tenants add up to the counts of their union, so percentiles over merged rollups
stay honest; averaging per-hour percentiles would not.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from django.db.models import Case, F, IntegerField, Value, When
from django.db.models.functions import Cast, Floor, Least, Ln

MIN_MS = 2.0**-4
STEPS_PER_DOUBLING = 8
G = 2.0 ** (1 / STEPS_PER_DOUBLING)
LAST = 24 * STEPS_PER_DOUBLING  # MIN_MS·2^24 ms ≈ 17.5 minutes
RELATIVE_ERROR = math.sqrt(G) - 1


def bucket_of(field: str = "latency_ms") -> Case:
    """The bucket of a latency column, in SQL (PostgreSQL, and SQLite through the math
    functions Django registers on its connections)."""
    steps = Floor(Ln(F(field) / Value(MIN_MS)) * Value(STEPS_PER_DOUBLING / math.log(2))) + Value(1)
    return Case(
        When(**{f"{field}__lt": MIN_MS}, then=Value(0)),
        default=Cast(Least(steps, Value(LAST)), IntegerField()),
        output_field=IntegerField(),
    )


def representative_ms(bucket: int) -> float:
    """The latency a bucket stands for: its geometric middle (half MIN_MS for bucket 0)."""
    if bucket <= 0:
        return MIN_MS / 2
    return MIN_MS * G ** (min(bucket, LAST) - 0.5)


def percentile(counts: Iterable[tuple[int, int]], q: float) -> float:
    """PERCENTILE_CONT(q) of the latencies the (bucket, count) pairs hold, each read as its
    bucket's representative: linear interpolation between the two closest ranks."""
    ordered = sorted((bucket, n) for bucket, n in counts if n > 0)
    total = sum(n for _, n in ordered)
    if total == 0:
        return 0.0
    rank = q * (total - 1)
    low, high = math.floor(rank), math.ceil(rank)
    low_value = high_value = 0.0
    seen = 0
    for bucket, n in ordered:
        if seen <= low < seen + n:
            low_value = representative_ms(bucket)
        if seen <= high < seen + n:
            high_value = representative_ms(bucket)
            break
        seen += n
    return low_value + (rank - low) * (high_value - low_value)
