"""Writes for freight templates (the admin is their only writer)."""

from __future__ import annotations

from django.db import IntegrityError, transaction

from apps.shipping.models import FreightTemplate
from apps.shipping.selectors import terms_cache_clear
from starmall.errors import InvalidState


def freight_template_make_default(*, template_id: int) -> None:
    """Make the template the shop's default and the previous default an ordinary template, in
    one transaction (products without a template are charged by the new one from then on).

    Two staff making different templates default at the same moment: the partial UNIQUE
    constraint lets one win; the other gets InvalidState and nothing changes.
    """
    try:
        with transaction.atomic():
            FreightTemplate.objects.filter(is_default=True).exclude(pk=template_id).update(is_default=False)
            FreightTemplate.objects.filter(pk=template_id).update(is_default=True)
            terms_cache_clear()  # queryset updates send no post_save
    except IntegrityError:
        raise InvalidState("默认运费模板刚被他人修改，请刷新后重试。") from None
