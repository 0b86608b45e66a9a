"""Cloud receipt printers staff configure, and print jobs: one row per ticket or waybill sent."""

from __future__ import annotations

from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models


class Printer(models.Model):
    """A cloud receipt printer (58 mm, 32 characters a line). ``sn`` and ``key`` are printed
    under the device (飞鹅: 打印机编号 / 识别码); the account's user and UKEY are settings
    (``PRINTER_FEIE_USER`` / ``PRINTER_FEIE_USER_KEY``, docs/DEPLOY.md)."""

    class Provider(models.TextChoices):
        FEIE = "feie", "飞鹅云"  # api.feieyun.cn Open_printMsg
        SANDBOX = "sandbox", "沙箱打印机"  # the sandbox's 飞鹅 emulator: GET /sandbox/printer shows the paper

    provider = models.CharField(verbose_name="服务商", max_length=16, choices=Provider.choices, default=Provider.FEIE)
    name = models.CharField(verbose_name="名称", max_length=50)
    sn = models.CharField(verbose_name="打印机编号(SN)", max_length=64)
    key = models.CharField(verbose_name="识别码(KEY)", max_length=64, blank=True)
    copies = models.PositiveSmallIntegerField(
        verbose_name="打印联数", default=1, validators=[MinValueValidator(1), MaxValueValidator(5)]
    )
    active = models.BooleanField(verbose_name="启用", default=True)
    print_on_payment = models.BooleanField(verbose_name="支付后自动打印小票", default=False)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "小票打印机"
        verbose_name_plural = "小票打印机"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["provider", "sn"], name="printer_provider_sn_uniq"),
            models.CheckConstraint(condition=models.Q(copies__gte=1, copies__lte=5), name="printer_copies_1_5"),
        ]

    def __str__(self) -> str:
        return f"{self.name}（{self.sn}）"


class PrintJob(models.Model):
    """One ticket sent to a printer, or one waybill ordered from the waybill provider.

    ``key`` is UNIQUE: the same print asked twice (a payment's follow-up redelivered, a double
    click) is one row, and a row is sent until it is ``done`` once. Only 重打 (reprint) makes a
    new row, with a new key. Sent by the worker after commit; retried on failure.
    """

    class Kind(models.TextChoices):
        TICKET = "ticket", "小票"  # the order's receipt on a cloud printer
        LABEL = "label", "电子面单"  # a waybill ordered (tracking number + label), then the order shipped

    class Status(models.TextChoices):
        PENDING = "pending", "待发送"  # waiting for (another) attempt
        SENDING = "sending", "发送中"  # a worker holds it (until ``locked_until``)
        DONE = "done", "已完成"  # the provider accepted it
        FAILED = "failed", "失败"  # gave up after MAX_ATTEMPTS, or the provider refused; see ``error``

    MAX_ATTEMPTS = 5
    LEASE_SECONDS = 120  # a worker that claimed a job and died frees it after this

    key = models.CharField(verbose_name="唯一键", max_length=100, unique=True)
    order = models.ForeignKey("orders.Order", verbose_name="订单", on_delete=models.CASCADE, related_name="print_jobs")
    kind = models.CharField(verbose_name="类型", max_length=16, choices=Kind.choices)
    printer = models.ForeignKey(
        Printer, verbose_name="打印机", null=True, blank=True, on_delete=models.PROTECT, related_name="jobs"
    )  # tickets only
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.PENDING)
    attempts = models.PositiveSmallIntegerField(verbose_name="尝试次数", default=0)
    requested_by = models.CharField(verbose_name="发起人", max_length=64)  # staff:<username> or system:paid
    content = models.TextField(verbose_name="打印内容", blank=True)  # the ticket as sent (飞鹅 markup)
    answer = models.TextField(verbose_name="服务商返回", blank=True)  # the provider's last answer, as received
    error = models.TextField(verbose_name="错误", blank=True)
    carrier_code = models.CharField(verbose_name="快递公司编码", max_length=32, blank=True)  # labels
    tracking_no = models.CharField(verbose_name="快递单号", max_length=40, blank=True)  # labels
    label_url = models.URLField(verbose_name="面单", max_length=500, blank=True)  # labels
    note = models.CharField(verbose_name="结果", max_length=255, blank=True)  # e.g. 已发货 / 未发货：<why>
    locked_until = models.DateTimeField(verbose_name="锁定至", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)
    done_at = models.DateTimeField(verbose_name="完成时间", null=True, blank=True)

    class Meta:
        verbose_name = "打印任务"
        verbose_name_plural = "打印任务"
        ordering = ["-id"]
        indexes = [models.Index(fields=["status", "created_at"], name="printjob_status_idx")]
        permissions = [("print_order", "打印小票、电子面单")]

    def __str__(self) -> str:
        return f"{self.get_kind_display()} #{self.pk}"
