"""Promotion codes: mini-program codes (``wxa/getwxacodeunlimit``) made once per scene and
served from storage.

The scene carries the caller's referral code (``r=<code>``) and, for a product or a teacher,
its id (``&p=<id>`` / ``&t=<id>``); a channel's code carries ``c=<code>``. The image is asked of
WeChat once, saved through ``default_storage`` under a name derived from the scene, and its
row (UNIQUE ``scene``) answers every later request: the same request gives the same image.
"""

from __future__ import annotations

import hashlib
import logging

import requests
from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.db import IntegrityError
from wechatpy.exceptions import WeChatClientException

from apps.distribution import referral
from apps.distribution.models import Channel, PromotionCode
from apps.files.services import media_url
from starmall.errors import InvalidInput, NotFound, WechatUnavailable

logger = logging.getLogger(__name__)

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _fetch_png(scene: str, page: str) -> bytes:
    """Ask WeChat for the code image of ``scene``; raises WechatUnavailable."""
    from apps.accounts import wechat

    try:
        answer = wechat.client().wxa.get_wxa_code_unlimited(scene, width=430, page=page or None)
    except WeChatClientException as exc:
        logger.warning("getwxacodeunlimit failed: %s", exc)
        raise WechatUnavailable("暂时无法生成小程序码，请稍后再试。", wechat_errcode=int(exc.errcode or 0)) from exc
    except requests.RequestException as exc:
        raise WechatUnavailable("暂时无法连接微信，请稍后再试。") from exc
    content = getattr(answer, "content", b"")
    if not content.startswith(PNG_MAGIC):
        raise WechatUnavailable("微信没有返回小程序码图片。")
    return content


def code_for_scene(*, scene: str, page: str = "") -> PromotionCode:
    """The stored code image of ``scene`` (<= 32 chars), made and stored on first need."""
    found = PromotionCode.objects.filter(scene=scene).first()
    if found is not None:
        return found
    png = _fetch_png(scene, page)
    name = f"codes/{hashlib.sha256(scene.encode()).hexdigest()[:32]}.png"
    if not default_storage.exists(name):
        name = default_storage.save(name, ContentFile(png))
    try:
        return PromotionCode.objects.create(scene=scene, page=page, storage_name=name)
    except IntegrityError:  # a concurrent request stored it first
        return PromotionCode.objects.get(scene=scene)


def promotion_code(*, customer_id: int, kind: str, object_id: int | None = None) -> dict[str, str]:
    """``POST /me/codes``: ``{"url", "scene"}`` of the caller's code (``kind`` referral /
    product / teacher with ``object_id``). Raises InvalidInput (no id for product/teacher),
    NotFound (no such product or teacher), WechatUnavailable."""
    from apps.catalog.models import Product, Teacher

    distributor = referral.distributor_for(customer_id=customer_id)
    scene = f"r={distributor.referral_code}"
    if kind in ("product", "teacher"):
        if object_id is None:
            raise InvalidInput("请指定商品或老师。", id=["kind 为 product/teacher 时必填。"])
        model = Product if kind == "product" else Teacher
        if not model.objects.filter(pk=object_id, is_active=True).exists():
            raise NotFound("商品不存在。" if kind == "product" else "老师不存在。")
        scene += f"&{kind[0]}={object_id}"
    code = code_for_scene(scene=scene, page=settings.PROMOTION_CODE_PAGE)
    return {"url": media_url(code.storage_name), "scene": scene}


def channel_code_image(*, channel: Channel) -> str:
    """Staff: the channel's code image (``c=<code>``), stored once; returns its URL."""
    code = code_for_scene(scene=f"c={channel.code}", page=settings.PROMOTION_CODE_PAGE)
    Channel.objects.filter(pk=channel.pk).update(image=code.storage_name)
    return media_url(code.storage_name)
