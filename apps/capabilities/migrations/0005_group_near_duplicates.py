"""Requests recorded under names that differ only by filler words or plurals ("export orders
as CSV", `export_orders_csv`) become one group: the name of each is recomputed and rows of
one tenant, name and reason are merged (counts summed, samples kept newest first, the
operators' answer of the most requested kept)."""

from django.db import migrations

MAX_SAMPLES = 5


def merge_near_duplicates(apps, schema_editor):
    from apps.common.capability_names import capability_name

    CapabilityRequest = apps.get_model("capabilities", "CapabilityRequest")
    groups: dict[tuple[int, str, str], list] = {}
    for row in CapabilityRequest.objects.order_by("-count", "pk"):
        groups.setdefault((row.tenant_id, capability_name(row.name), row.reason), []).append(row)
    for (_, name, _), rows in groups.items():
        kept, *merged = rows
        if not merged and kept.name == name:
            continue
        for row in merged:
            kept.count += row.count
            kept.first_seen = min(kept.first_seen, row.first_seen)
            kept.last_seen = max(kept.last_seen, row.last_seen)
        samples = [sample for row in rows for sample in row.samples]
        kept.samples = sorted(samples, key=lambda sample: str(sample.get("at", "")), reverse=True)[:MAX_SAMPLES]
        CapabilityRequest.objects.filter(pk__in=[row.pk for row in merged]).delete()
        kept.name = name
        kept.save()


class Migration(migrations.Migration):
    dependencies = [("capabilities", "0004_reason_label")]

    operations = [migrations.RunPython(merge_near_duplicates, migrations.RunPython.noop)]
