from pathlib import Path

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import transaction

from apps.accounts import wallet
from apps.accounts.models import Customer
from apps.catalog.models import Product

DEMO_OPENID = "oDemoCustomer0000000000000001"  # fixtures/demo.json
DEMO_BALANCE_FEN = 100000  # 1000.00 yuan (README: "the demo customer has 1000.00 yuan balance")
DEMO_POINTS = 500
# The demo wallet's ledger keys (WalletEvent UNIQUE (kind, reason, ref)): credited once, ever.
DEMO_BALANCE_REF = "demo-seed:balance"
DEMO_POINTS_REF = "demo-seed:points"


class Command(BaseCommand):
    help = (
        "Load fixtures/demo.json (catalog, 2 teachers, a demo customer) into an empty shop and credit "
        "the demo customer's balance and points through the wallet (ledger rows); "
        "then demo flash sales (seed_flash_sales), freight templates (seed_freight), coupon "
        "templates and sign-in rules (seed_marketing), recharge packages (seed_recharge_packages), "
        "member levels, a member card and a member price (seed_members), the first teacher's hours and services (seed_booking)."
    )

    def handle(self, *args, **options):
        # Only into an empty catalog: reloading would reset stock and balances that orders
        # have since changed (and break stock conservation).
        if Product.objects.exists():
            self.stdout.write("demo data: catalog not empty, nothing loaded")
        else:
            with transaction.atomic():  # the fixture and the demo wallet together, or neither
                call_command("loaddata", "fixtures/demo.json", verbosity=0)
                demo_wallet_credit()
            self.stdout.write(f"demo data: loaded {Product.objects.count()} products")
        self._copy_pictures()
        # A live and an upcoming 秒杀 whenever there is none (their times are relative to now);
        # by name: marketing sits above catalog.
        call_command("seed_flash_sales")
        call_command("seed_freight")  # freight templates (shipping): remote provinces, heavy goods
        call_command("seed_marketing")  # coupon templates, sign-in rules, the demo customer's coupon
        call_command("seed_recharge_packages")
        call_command("seed_content")  # home page blocks, an article category, two articles
        call_command("seed_stores")  # a pickup store and its staff login store / starmall-store
        call_command("seed_subscribe_templates")  # subscription templates of both scenes (accounts)
        call_command("seed_official")  # official-account reply rules and a menu (wechat_official)
        call_command("seed_distribution")  # commission rates 10 %/5 %, a channel code (distribution)
        call_command("seed_points_mall")  # a coupon and a goods item for points (points_mall)
        call_command("seed_crm")  # customer tags: a rule (高消费) and one by hand (crm, members)
        call_command("seed_members")  # member levels, a 30-day member card, a member price (members)
        call_command("seed_booking")  # the first teacher's hours, a 60- and a 30-minute service (appointments)
        call_command("seed_printing")  # a sandbox receipt printer printing on payment (printing)

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


def demo_wallet_credit() -> None:
    """Give the demo customer (``DEMO_OPENID``) its balance (``DEMO_BALANCE_FEN`` fen) and points
    (``DEMO_POINTS``) through the wallet services, so that each is a ledger row (reason
    ``adjust``) and "balance = sum of the balance ledger, points = sum of the points ledger"
    holds from the first start. demo.json itself carries a zero wallet. Once per shop: the
    rows' refs (``DEMO_BALANCE_REF`` / ``DEMO_POINTS_REF``) are UNIQUE, a second call credits
    nothing. Does nothing when the demo customer does not exist.
    """
    customer_id = Customer.objects.filter(openid=DEMO_OPENID).values_list("pk", flat=True).first()
    if customer_id is None:
        return
    wallet.balance_adjust(customer_id=customer_id, amount_fen=DEMO_BALANCE_FEN, ref=DEMO_BALANCE_REF)
    wallet.points_adjust(customer_id=customer_id, points=DEMO_POINTS, ref=DEMO_POINTS_REF)
