"""Profile and address edits (API.md Additions: PATCH /me, PATCH/DELETE /addresses/{id}).

Every address write locks the customer's row first (``services.customer_lock``), so one
customer's edits pass one at a time; the partial UNIQUE ``address_one_default`` is the last
line of defence for "exactly one default while the customer has addresses".
"""

from __future__ import annotations

from django.db import transaction

from apps.accounts import address_cards
from apps.accounts.models import Address, Customer
from apps.accounts.wallet import customer_lock
from apps.files.services import is_our_upload_url
from starmall.errors import InvalidInput, NotFound


def customer_update_profile(*, customer: Customer, **fields) -> Customer:
    """Change ``nickname`` (1-64 characters), ``avatar_url`` (an image uploaded through
    POST /uploads, or "" to clear it) and/or ``birthday`` (a date, None to clear it; birthday
    coupons: apps.marketing.gifts); other keys are ignored. Raises InvalidInput
    (``detail.avatar_url``) for any other URL. Writes only the given columns."""
    changed = {}
    if "nickname" in fields:
        changed["nickname"] = fields["nickname"].strip()[:64]
        if not changed["nickname"]:
            raise InvalidInput("昵称不能为空。", nickname=["昵称不能为空"])
    if "avatar_url" in fields:
        url = fields["avatar_url"] or ""
        if url and not is_our_upload_url(url, family="image"):
            raise InvalidInput("头像须先通过上传接口上传。", avatar_url=["请使用 POST /api/v1/uploads 返回的图片地址"])
        changed["avatar_url"] = url
    if "birthday" in fields:
        changed["birthday"] = fields["birthday"]
    if changed:
        Customer.objects.filter(pk=customer.pk).update(**changed)
        for name, value in changed.items():
            setattr(customer, name, value)
    return customer


def address_update(*, customer: Customer, address_id: int, **fields) -> Address:
    """Change the customer's address ``address_id`` (any of name, phone, province, city,
    district, detail, is_default). ``is_default=True`` makes it the only default;
    ``is_default=False`` on the default passes the default to the newest other address (an
    only address stays default). Another customer's address is NotFound."""
    with transaction.atomic():
        customer_lock(customer_id=customer.pk)
        address = Address.objects.filter(pk=address_id, customer=customer).first()
        if address is None:
            raise NotFound("地址不存在。", address_id=address_id)
        address_cards.card_refresh_after_commit(customer.pk)  # the flash-sale gate's copy
        make_default = fields.pop("is_default", None)
        for name, value in fields.items():
            setattr(address, name, value)
        if fields:
            address.save(update_fields=list(fields))
        if make_default is True and not address.is_default:
            customer.addresses.filter(is_default=True).update(is_default=False)
            Address.objects.filter(pk=address.pk).update(is_default=True)
            address.is_default = True
        elif make_default is False and address.is_default:
            other = customer.addresses.exclude(pk=address.pk).order_by("-id").first()
            if other is not None:
                Address.objects.filter(pk=address.pk).update(is_default=False)
                Address.objects.filter(pk=other.pk).update(is_default=True)
                address.is_default = False
    return address


def address_delete(*, customer: Customer, address_id: int) -> None:
    """Delete the customer's address; if it was the default, the newest remaining one becomes
    the default (none when it was the last). Orders keep their own snapshot. Another
    customer's address is NotFound."""
    with transaction.atomic():
        customer_lock(customer_id=customer.pk)
        address = Address.objects.filter(pk=address_id, customer=customer).first()
        if address is None:
            raise NotFound("地址不存在。", address_id=address_id)
        address_cards.card_refresh_after_commit(customer.pk)  # the flash-sale gate's copy
        address.delete()
        if address.is_default:
            newest = customer.addresses.order_by("-id").first()
            if newest is not None:
                Address.objects.filter(pk=newest.pk).update(is_default=True)
