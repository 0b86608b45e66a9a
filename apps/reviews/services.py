"""Writing, hiding and answering reviews. Each change and the product's aggregate
(``review_count``, ``rating_total``, moved with F()) commit in one transaction."""

from __future__ import annotations

from django.db import IntegrityError, transaction
from django.db.models import F
from django.utils import timezone

from apps.catalog.models import Product
from apps.files.services import is_our_upload_url
from apps.orders.models import Order, OrderLine, OrderStatus
from apps.reviews.models import Review
from starmall.errors import InvalidInput, InvalidState, NotFound


def review_create(
    *, order_no: str, customer_id: int, line_id: int, rating: int, text: str = "", images: list[str] | None = None
) -> Review:
    """The customer reviews line ``line_id`` of their completed order ``order_no``.

    ``rating`` 1..5; ``text`` up to 500 characters; ``images`` up to 6 URLs answered by POST
    /uploads. Raises NotFound (order not theirs; line not in the order), InvalidInput (rating,
    images), InvalidState (order not ``completed``; line already reviewed — UNIQUE(line)).
    """
    images = list(images or [])
    if not 1 <= rating <= 5:
        raise InvalidInput("评分须为 1 到 5。", rating=["评分须为 1 到 5"])
    if len(images) > Review.MAX_IMAGES:
        raise InvalidInput(f"最多 {Review.MAX_IMAGES} 张图片。", images=[f"最多 {Review.MAX_IMAGES} 张图片"])
    if any(not is_our_upload_url(url, family="image") for url in images):
        raise InvalidInput("图片须先通过上传接口上传。", images=["请使用 POST /api/v1/uploads 返回的图片地址"])
    order = Order.objects.filter(order_no=order_no, customer_id=customer_id).first()
    if order is None:
        raise NotFound("订单不存在。", order_no=order_no)
    line = OrderLine.objects.filter(pk=line_id, order=order).first()
    if line is None:
        raise NotFound("订单中没有该商品。", line_id=line_id)
    if order.status != OrderStatus.COMPLETED:
        raise InvalidState("订单完成后才能评价。", status=order.status)
    try:
        with transaction.atomic():
            review = Review.objects.create(
                line=line,
                order=order,
                product_id=line.product_id,
                customer_id=customer_id,
                rating=rating,
                text=text[:500],
                images=images,
            )
            Product.objects.filter(pk=line.product_id).update(
                review_count=F("review_count") + 1, rating_total=F("rating_total") + rating
            )
    except IntegrityError:
        raise InvalidState("该商品已评价。", line_id=line_id) from None
    return review


@transaction.atomic
def review_set_hidden(*, review_id: int, hidden: bool, actor: str) -> bool:
    """Staff hide (or show again) a review; the product's aggregate follows. False when it
    already was in that state (conditional UPDATE)."""
    if Review.objects.filter(pk=review_id, is_hidden=not hidden).update(is_hidden=hidden) != 1:
        return False
    review = Review.objects.get(pk=review_id)
    sign = -1 if hidden else 1
    Product.objects.filter(pk=review.product_id).update(
        review_count=F("review_count") + sign, rating_total=F("rating_total") + sign * review.rating
    )
    return True


def review_reply(*, review_id: int, text: str, actor: str) -> bool:
    """Staff answer a review (shown under it as ``reply``); a new answer replaces the old one.
    Raises InvalidInput for an empty text; False when the review does not exist."""
    text = (text or "").strip()
    if not text:
        raise InvalidInput("回复内容不能为空。", reply=["回复内容不能为空"])
    return (
        Review.objects.filter(pk=review_id).update(reply=text[:500], replied_by=actor, replied_at=timezone.now()) == 1
    )


def product_reviews(*, product_id: int):
    """A product's visible reviews, newest first, with the customer (nickname) loaded."""
    return Review.objects.filter(product_id=product_id, is_hidden=False).select_related("customer").order_by("-id")
