import pytest

from apps.marketing.models import CouponTemplate
from apps.points_mall.models import Item


@pytest.fixture
def coupon_item(db):
    """``coupon_item(points=100, stock=5, limit_per_customer=1)`` -> a coupon item (its template: 10 yuan off)."""

    def make(*, points: int = 100, stock: int = 5, limit_per_customer: int = 1, total: int = 100) -> Item:
        template = CouponTemplate.objects.create(
            name="积分兑换券 10 元", kind="amount", amount_fen=1000, valid_days=30, total=total, per_customer=1
        )
        return Item.objects.create(
            name="10 元券",
            kind=Item.Kind.COUPON,
            coupon_template=template,
            points=points,
            stock=stock,
            limit_per_customer=limit_per_customer,
        )

    return make


@pytest.fixture
def goods_item(make_sku):
    """``goods_item(points=300, stock=5, limit_per_customer=1, sku_stock=10)`` -> a goods item."""

    def make(*, points: int = 300, stock: int = 5, limit_per_customer: int = 1, sku_stock: int = 10) -> Item:
        sku = make_sku(price_fen=9900, stock=sku_stock, name="积分兑换茶杯")
        return Item.objects.create(
            name="茶杯",
            kind=Item.Kind.GOODS,
            sku=sku,
            points=points,
            stock=stock,
            limit_per_customer=limit_per_customer,
        )

    return make
