from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand

from apps.catalog.models import Product


class Command(BaseCommand):
    help = ("Load fixtures/demo.json (catalog, 2 teachers, a demo customer) into an empty shop; "
            "then demo flash sales (seed_flash_sales), freight templates (seed_freight), coupon "
            "templates and sign-in rules (seed_marketing), recharge packages (seed_recharge_packages).")

    def handle(self, *args, **options):
        # Only into an empty catalog: reloading would reset stock and balances that orders
        # have since changed (and break stock conservation).
        if Product.objects.exists():
            self.stdout.write("demo data: catalog not empty, nothing loaded")
        else:
            call_command("loaddata", "fixtures/demo.json", verbosity=0)
            self.stdout.write(f"demo data: loaded {Product.objects.count()} products")
        self._copy_pictures()
        # A live and an upcoming 秒杀 whenever there is none (their times are relative to now);
        # by name: marketing sits above catalog.
        call_command("seed_flash_sales")
        call_command("seed_freight")  # freight templates (shipping): remote provinces, heavy goods
        call_command("seed_marketing")  # coupon templates, sign-in rules, the demo customer's coupon
        call_command("seed_recharge_packages")

    def _copy_pictures(self) -> None:
        """The demo products' pictures (fixtures/images/*.png, generated once with Pillow) into
        the media storage as ``demo/<name>`` — the storage names demo.json's ``cover_url`` and
        ``images`` hold — unless already there."""
        copied = 0
        for path in sorted((Path(settings.BASE_DIR) / "fixtures" / "images").glob("*.png")):
            name = f"demo/{path.name}"
            if not default_storage.exists(name):
                default_storage.save(name, ContentFile(path.read_bytes()))
                copied += 1
        self.stdout.write(f"demo pictures: {copied} copied to media")
