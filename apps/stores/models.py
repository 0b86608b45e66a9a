"""Self-pickup (自提): stores customers collect their goods at, the staff of each store, the
log of verifications, the wrong codes staff typed (and their hourly counter), and the pickup
orders as the back office lists them per store.

An order keeps its store by id and as a snapshot (``orders.Order.pickup_store_id`` /
``pickup_store``): orders sits below stores and has no foreign key to it.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from apps.orders.models import Delivery, Order


class Store(models.Model):
    name = models.CharField(verbose_name="门店名称", max_length=64)
    address = models.CharField(verbose_name="地址", max_length=200)
    phone = models.CharField(verbose_name="电话", max_length=32, blank=True)
    hours = models.CharField(verbose_name="营业时间", max_length=64, blank=True, help_text="如 每天 10:00-21:00")
    # WGS-84 degrees (what wx.getLocation gives with type "wgs84"); 6 decimals ≈ 0.1 m
    lat = models.DecimalField(verbose_name="纬度", max_digits=9, decimal_places=6)
    lng = models.DecimalField(verbose_name="经度", max_digits=9, decimal_places=6)
    is_active = models.BooleanField(verbose_name="营业中", default=True)  # only open stores are listed and chosen
    sort = models.IntegerField(verbose_name="排序", default=0)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "自提门店"
        verbose_name_plural = "自提门店"
        ordering = ["sort", "id"]

    def __str__(self) -> str:
        return self.name

    def snapshot(self) -> dict:
        """The store as an order keeps it (shown on the order even if the store changes later)."""
        return {"id": self.pk, "name": self.name, "address": self.address, "phone": self.phone, "hours": self.hours}


class StoreStaff(models.Model):
    """A staff login that works at one store: it sees and verifies only that store's pickups."""

    user = models.OneToOneField(
        settings.AUTH_USER_MODEL, verbose_name="员工账号", on_delete=models.CASCADE, related_name="store_staff"
    )
    store = models.ForeignKey(Store, verbose_name="门店", on_delete=models.CASCADE, related_name="staff")

    class Meta:
        verbose_name = "门店店员"
        verbose_name_plural = "门店店员"

    def __str__(self) -> str:
        return f"{self.user} @ {self.store}"


class PickupVerification(models.Model):
    """The log of a verification: one per order (UNIQUE), written in the transaction whose
    conditional UPDATE completed the order (``apps.stores.services.pickup_verify``). ``code``
    is kept masked (``****5217``): staff never see a whole pickup code."""

    order = models.OneToOneField(
        Order, verbose_name="订单", on_delete=models.PROTECT, related_name="pickup_verification"
    )
    store = models.ForeignKey(Store, verbose_name="门店", on_delete=models.PROTECT, related_name="verifications")
    code = models.CharField(verbose_name="核销码", max_length=16)
    verified_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name="核销人", on_delete=models.PROTECT, related_name="pickup_verifications"
    )
    verified_at = models.DateTimeField(verbose_name="核销时间")

    class Meta:
        verbose_name = "核销记录"
        verbose_name_plural = "核销记录"
        ordering = ["-id"]
        permissions = [("verify_pickup", "可以核销到店自提订单")]

    def __str__(self) -> str:
        return f"{self.code} · {self.order_id}"


class PickupVerifyHour(models.Model):
    """One staff login's pickup-code checks in one Shanghai clock hour: the throttle's counter
    (``apps.stores.verify_throttle``). ``tries`` is the hour's wrong codes plus the checks under
    way, raised only by a conditional UPDATE below ``PICKUP_VERIFY_FAILURES_PER_HOUR``."""

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name="员工账号", on_delete=models.CASCADE, related_name="+"
    )
    hour = models.DateTimeField(verbose_name="时段开始")
    tries = models.PositiveIntegerField(verbose_name="错误次数", default=0)

    class Meta:
        verbose_name = "核销计数"
        verbose_name_plural = "核销计数"
        constraints = [models.UniqueConstraint(fields=["user", "hour"], name="pickup_verify_hour_user_hour_uniq")]

    def __str__(self) -> str:
        return f"{self.user_id} {self.hour:%Y-%m-%d %H}:00 {self.tries}"


class PickupVerifyFailure(models.Model):
    """A wrong pickup code a staff login typed (audit for store managers): who, at which store,
    the code masked (``****5217``), why it was wrong, when. At most
    ``PICKUP_VERIFY_FAILURES_PER_HOUR`` rows per login and hour: later tries are refused unread."""

    class Reason(models.TextChoices):
        NOT_FOUND = "not_found", "核销码不存在"
        OTHER_STORE = "other_store", "其他门店的订单"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, verbose_name="员工账号", on_delete=models.PROTECT, related_name="pickup_failures"
    )
    store = models.ForeignKey(
        Store, verbose_name="门店", on_delete=models.PROTECT, related_name="verify_failures", null=True, blank=True
    )
    code = models.CharField(verbose_name="核销码", max_length=16)
    reason = models.CharField(verbose_name="原因", max_length=16, choices=Reason.choices)
    created_at = models.DateTimeField(verbose_name="时间", default=timezone.now)

    class Meta:
        verbose_name = "核销码错误记录"
        verbose_name_plural = "核销码错误记录"
        ordering = ["-id"]
        indexes = [models.Index(fields=["user", "created_at"], name="pickup_failure_user_at_idx")]

    def __str__(self) -> str:
        return f"{self.code} · {self.get_reason_display()}"


class PickupOrderManager(models.Manager):
    def get_queryset(self):
        return super().get_queryset().filter(delivery=Delivery.PICKUP)


class PickupOrder(Order):
    """Pickup orders as the back office lists them (a store's staff: only their store's)."""

    objects = PickupOrderManager()

    class Meta:
        proxy = True
        verbose_name = "自提订单"
        verbose_name_plural = "自提订单"
