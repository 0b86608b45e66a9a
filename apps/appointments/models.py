"""Slots of a teacher's time and the bookings that fill them."""

from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class Slot(models.Model):
    """One bookable hour of a teacher (aware datetimes, generated in Shanghai time).

    ``booked`` moves only by conditional UPDATEs in ``apps.appointments.slots``; the CHECK
    constraints are the last line of defence. UNIQUE (teacher, start) makes generation rerunnable.
    """

    teacher = models.ForeignKey("catalog.Teacher", verbose_name="老师", on_delete=models.PROTECT, related_name="slots")
    start = models.DateTimeField(verbose_name="开始")
    end = models.DateTimeField(verbose_name="结束")
    capacity = models.PositiveSmallIntegerField(verbose_name="可约人数", default=1)
    booked = models.PositiveSmallIntegerField(verbose_name="已约", default=0)
    is_open = models.BooleanField(verbose_name="开放预约", default=True)  # staff can close a slot to new bookings

    class Meta:
        verbose_name = "预约时段"
        verbose_name_plural = "预约时段"
        ordering = ["start", "teacher_id"]
        permissions = [("manage_slot", "可以增删改预约时段（人数、开放、未被预约时段的时间）")]
        constraints = [
            models.UniqueConstraint(fields=["teacher", "start"], name="slot_teacher_start_unique"),
            models.CheckConstraint(condition=Q(booked__lte=F("capacity")), name="slot_booked_lte_capacity"),
        ]
        indexes = [models.Index(fields=["teacher", "start"], name="slot_teacher_start_idx")]

    def __str__(self) -> str:
        # Shanghai wall time: the stored value is UTC (the admin showed slots 8 h off).
        return f"{self.teacher} {timezone.localtime(self.start):%Y-%m-%d %H:%M}"

    @property
    def available(self) -> bool:
        return self.is_open and self.booked < self.capacity


class Booking(models.Model):
    """A slot taken by an order; UNIQUE ``order_no`` makes book and release happen once."""

    slot = models.ForeignKey(Slot, verbose_name="时段", on_delete=models.PROTECT, related_name="bookings")
    order_no = models.CharField(verbose_name="订单号", max_length=32, unique=True)
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="bookings"
    )
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "预约"
        verbose_name_plural = "预约"

    def __str__(self) -> str:
        return f"{self.slot} ← {self.order_no}"


class DayOff(models.Model):
    """A day a teacher does not work (Shanghai date): its slots are closed and slot generation
    makes that day's new slots closed too. UNIQUE (teacher, date); written by
    ``services.day_block`` only (booked slots of the day stay as they are, and are reported)."""

    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="days_off"
    )
    date = models.DateField(verbose_name="日期")
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        ordering = ["date"]
        verbose_name = "休息日"
        verbose_name_plural = "休息日"
        constraints = [models.UniqueConstraint(fields=["teacher", "date"], name="dayoff_teacher_date_unique")]

    def __str__(self) -> str:
        return f"{self.teacher} {self.date:%Y-%m-%d}"
