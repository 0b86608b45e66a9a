from django.core.management.base import BaseCommand, CommandError

from apps.logistics import carriers
from apps.orders import shipments
from apps.orders.models import Order
from starmall.errors import ShopError


class Command(BaseCommand):
    help = (
        "Ship a paid goods order with a carrier and tracking number, through the same service as "
        "the admin (orders.shipments.order_ship): ship_order <order_no> --carrier shunfeng --tracking-no SF123456789"
    )

    def add_arguments(self, parser):
        parser.add_argument("order_no")
        parser.add_argument("--carrier", required=True, choices=sorted(carriers.CARRIERS))
        parser.add_argument("--tracking-no", required=True)
        parser.add_argument("--actor", default="staff:cli")

    def handle(self, *args, order_no, carrier, tracking_no, actor, **options):
        order = Order.objects.filter(order_no=order_no).first()
        if order is None:
            raise CommandError(f"no order {order_no}")
        try:
            shipped = shipments.order_ship(order=order, actor=actor, carrier_code=carrier, tracking_no=tracking_no)
        except ShopError as exc:
            raise CommandError(f"not shipped: {exc.message} {exc.detail}") from exc
        if not shipped:
            order.refresh_from_db()
            raise CommandError(f"not shipped: the order is {order.status} ({order.kind}); only paid goods orders ship")
        self.stdout.write(f"{order_no} shipped: {carriers.carrier_name(carrier)} {tracking_no}")
