"""List the API tokens issued before the per-customer token sets (added with this migration), and drop
those of customers already deactivated, so that a token in Redis is an active customer's.

Tokens live in Redis, not in a table: ``apps.accounts.tokens.tokens_list_unlisted`` scans the
cache's token keys once. A Redis that cannot be reached is reported and skipped (the migration
does not fail): its tokens then stay unlisted until they expire, which only matters to the
sold-out gate (README "Limits").
"""

from django.db import migrations


def index_tokens(apps, schema_editor):
    from apps.accounts.tokens import tokens_list_unlisted

    Customer = apps.get_model("accounts", "Customer")
    try:
        tokens_list_unlisted(
            lambda ids: set(Customer.objects.filter(pk__in=ids, is_active=True).values_list("pk", flat=True)))
    except Exception as exc:  # noqa: BLE001 - Redis down at migrate time: report, do not block the deploy
        print(f"\n  accounts.0008: API tokens not indexed ({type(exc).__name__}: {exc}); "
              f"tokens issued before it stay unlisted until they expire")


class Migration(migrations.Migration):
    dependencies = [("accounts", "0007_chinese_labels")]
    operations = [migrations.RunPython(index_tokens, migrations.RunPython.noop)]
