"""Data migration: the staff roles (运营 / 客服 / 财务 / 老师) as groups with their permissions
(apps/backoffice/roles.py). Permissions are created first, as post_migrate would later."""

from django.db import migrations


def create_roles(apps, schema_editor):
    from django.contrib.auth.management import create_permissions
    from django.contrib.contenttypes.management import create_contenttypes

    from apps.backoffice.roles import sync_roles

    for app_config in apps.get_app_configs():
        app_config.models_module = True
        create_contenttypes(app_config, apps=apps, verbosity=0)
        create_permissions(app_config, apps=apps, verbosity=0)
        app_config.models_module = None
    sync_roles(apps.get_model("auth", "Group"), apps.get_model("auth", "Permission"))


def drop_roles(apps, schema_editor):
    from apps.backoffice.roles import ROLES

    apps.get_model("auth", "Group").objects.filter(name__in=list(ROLES)).delete()


class Migration(migrations.Migration):
    dependencies = [
        ("backoffice", "0001_permissions"),
        ("auth", "0012_alter_user_first_name_max_length"),
        ("contenttypes", "0002_remove_content_type_name"),
        ("accounts", "0003_chinese_labels"),
        ("catalog", "0003_chinese_labels"),
        ("appointments", "0003_chinese_labels"),
        ("orders", "0007_chinese_labels"),
        ("payments", "0007_chinese_labels"),
        ("marketing", "0002_chinese_labels"),
    ]

    operations = [migrations.RunPython(create_roles, drop_roles)]
