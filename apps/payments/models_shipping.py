"""Shipping information reported to WeChat (小程序发货信息管理, WECHAT.md "Shipping information").

Imported by ``apps.payments.models`` (Django finds models there); written only by
``apps.payments.shipping_info``.
"""

from django.db import models

from starmall.querysets import AutoNowQuerySet


class ShippingInfo(models.Model):
    """How a WeChat-paid order was delivered, as reported to WeChat: one row per order (UNIQUE),
    recorded in the transaction that shipped it, paid it (a consultation) or verified its pickup.

    ``version`` grows with each correction (staff changed the tracking number, or asked for
    another upload); each version is one outbox follow-up (``shipping_info:<order_no>:<version>``)
    and is uploaded until WeChat answers 0, then ``uploaded_version`` holds it: a version is never
    uploaded again once WeChat took it. ``body`` is what was sent last (WeChat's JSON).
    """

    class State(models.TextChoices):
        PENDING = "pending", "未上传"  # waiting for (another) try
        UPLOADED = "uploaded", "已上传"  # WeChat answered errcode 0 for the latest version
        FAILED = "failed", "上传失败"  # the tries ran out (an alert was raised); staff may upload again

    class LogisticsType(models.IntegerChoices):
        EXPRESS = 1, "快递发货"
        LOCAL = 2, "同城配送"  # shipped by the shop itself, no tracking number
        VIRTUAL = 3, "虚拟发货"  # a consultation
        PICKUP = 4, "用户自提"

    order = models.OneToOneField(
        "orders.Order", verbose_name="订单", on_delete=models.CASCADE, related_name="shipping_info"
    )
    payment = models.ForeignKey(
        "payments.Payment", verbose_name="支付", on_delete=models.PROTECT, related_name="shipping_infos"
    )
    out_trade_no = models.CharField(verbose_name="商户订单号", max_length=32)
    logistics_type = models.PositiveSmallIntegerField(verbose_name="发货方式", choices=LogisticsType.choices)
    version = models.PositiveIntegerField(verbose_name="版本", default=1)
    uploaded_version = models.PositiveIntegerField(verbose_name="已上传版本", default=0)
    state = models.CharField(verbose_name="发货信息", max_length=16, choices=State.choices, default=State.PENDING)
    attempts = models.PositiveIntegerField(verbose_name="上传次数", default=0)  # all tries, every version
    last_errcode = models.IntegerField(verbose_name="最近错误码", null=True, blank=True)  # WeChat's; None: no answer
    last_error = models.TextField(verbose_name="最近错误", blank=True)
    body = models.JSONField(verbose_name="上传内容", default=dict, blank=True)
    uploaded_at = models.DateTimeField(verbose_name="上传时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    objects = AutoNowQuerySet.as_manager()

    class Meta:
        verbose_name = "发货信息"
        verbose_name_plural = "发货信息"
        ordering = ["-id"]
        permissions = [("upload_shipping_info", "可以重新上传发货信息（微信发货信息管理）")]
        indexes = [models.Index(fields=["state"], name="shipping_info_state_idx")]

    def __str__(self) -> str:
        return f"{self.out_trade_no} v{self.version} {self.get_state_display()}"


class WechatJumpPath(models.Model):
    """The order-detail path set with ``wxa/sec/order/set_msg_jump_path``: a row per (appid,
    path) once WeChat took it, so it is set once per shop (again only if the path changes)."""

    appid = models.CharField(verbose_name="小程序 appid", max_length=32)
    path = models.CharField(verbose_name="路径", max_length=200)
    set_at = models.DateTimeField(verbose_name="设置时间")

    class Meta:
        verbose_name = "订单详情路径"
        verbose_name_plural = "订单详情路径"
        constraints = [models.UniqueConstraint(fields=["appid", "path"], name="wechat_jump_path_once")]

    def __str__(self) -> str:
        return self.path
