"""List the API tokens issued before the per-customer token sets (issue 8, round 3), and drop
those of customers already deactivated, so that a token in Redis is an active customer's.

Tokens live in Redis, not in a table: this scans the cache's ``auth:token:*`` keys once. A Redis
that cannot be reached is reported and skipped (the migration does not fail): its tokens then
stay unlisted until they expire, which only matters to the sold-out gate (README "Limits").
"""

from django.conf import settings
from django.db import migrations


def index_tokens(apps, schema_editor):
    from django.core.cache import cache
    from django_redis import get_redis_connection

    Customer = apps.get_model("accounts", "Customer")
    try:
        conn = get_redis_connection("default")
        owners: dict[int, list[bytes]] = {}
        for key in conn.scan_iter(match=cache.make_key("auth:token:*"), count=1000):
            value = conn.get(key)
            if value is not None and value.isdigit():
                owners.setdefault(int(value), []).append(key)
        active = set(Customer.objects.filter(pk__in=owners, is_active=True).values_list("pk", flat=True))
        for customer_id, keys in owners.items():
            if customer_id in active:
                listed = cache.make_key(f"auth:customer:{customer_id}:tokens")
                conn.sadd(listed, *keys)
                conn.expire(listed, settings.AUTH_TOKEN_TTL_SECONDS)
            else:
                conn.delete(*keys)
    except Exception as exc:  # noqa: BLE001 - Redis down at migrate time: report, do not block the deploy
        print(f"\n  accounts.0008: API tokens not indexed ({type(exc).__name__}: {exc}); "
              f"tokens issued before it stay unlisted until they expire")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0007_chinese_labels")]
    operations = [migrations.RunPython(index_tokens, migrations.RunPython.noop)]
