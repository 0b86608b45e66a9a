from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.stores.models import Store, StoreStaff

STAFF_ROLE = "门店店员"  # apps/backoffice/roles.py ROLES (its permissions are added by sync_roles)
DEMO_LOGIN, DEMO_PASSWORD = "store", "starmall-store"  # API.md: the demo store-staff login


class Command(BaseCommand):
    help = (
        "Demo pickup store with its staff login store / starmall-store (idempotent; the password "
        "is set only when the login is created)."
    )

    def handle(self, *args, **options):
        with transaction.atomic():
            store, _ = Store.objects.get_or_create(
                name="星辰茶舍·西湖店",
                defaults={
                    "address": "浙江省杭州市西湖区文三路100号",
                    "phone": "0571-88886666",
                    "hours": "每天 10:00-21:00",
                    "lat": "30.278900",
                    "lng": "120.145200",
                },
            )
            user, created = get_user_model().objects.get_or_create(username=DEMO_LOGIN, defaults={"is_staff": True})
            if created:
                user.set_password(DEMO_PASSWORD)
                user.save(update_fields=["password"])
            user.groups.add(Group.objects.get_or_create(name=STAFF_ROLE)[0])
            StoreStaff.objects.get_or_create(user=user, defaults={"store": store})
        self.stdout.write(f"demo store: {store.name}, staff login {DEMO_LOGIN}")
