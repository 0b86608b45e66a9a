"""A teacher's hours, rules and services, the bookings of their time, and the legacy slot grid."""

from django.conf import settings
from django.db import models
from django.db.models import F, Q
from django.utils import timezone


class Slot(models.Model):
    """One bookable hour of a teacher (aware datetimes, generated in Shanghai time).

    The live bookings meeting its time are its count (``slots.slot_live_bookings``); the stored
    ``booked`` column is kept but no longer written or read (derived rows set it in memory:
    ``selectors.slot_list``). UNIQUE (teacher, start) makes generation rerunnable.
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


def default_min_notice_minutes() -> int:
    """A new teacher's ``min_notice_minutes``: ``settings.BOOKING_MIN_NOTICE_MINUTES``."""
    return settings.BOOKING_MIN_NOTICE_MINUTES


class Attendance(models.TextChoices):
    UNMARKED = "", "未标记"  # counts as attended when the consultation completes
    ATTENDED = "attended", "已到"
    NO_SHOW = "no_show", "顾客爽约"  # the money is kept
    TEACHER_ABSENT = "teacher_absent", "老师缺席"  # refunded in full at once


class Booking(models.Model):
    """A teacher's time taken by an order: ``[start, end)`` of one service (aware datetimes).

    ``live`` (unpaid within its ``hold_until``, paid, completed) is cleared once, by a conditional
    UPDATE, when the order is cancelled, expires or is refunded. The database refuses two live
    bookings of a teacher whose ``[start, blocked_until)`` ranges overlap (``blocked_until`` =
    ``end`` + the teacher's ``buffer_minutes`` when booked): on PostgreSQL an exclusion constraint
    (migration 0007), on SQLite the serialised write of ``apps.appointments.bookings``.
    UNIQUE ``order_no``: an order books once. ``slot`` is the legacy grid row, when there is one.
    """

    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.PROTECT, related_name="bookings"
    )
    product = models.ForeignKey(
        "catalog.Product", verbose_name="咨询服务", null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    start = models.DateTimeField(verbose_name="开始")
    end = models.DateTimeField(verbose_name="结束")
    blocked_until = models.DateTimeField(verbose_name="占用至")  # end + buffer: the range the database keeps apart
    slot = models.ForeignKey(
        Slot, verbose_name="时段", null=True, blank=True, on_delete=models.PROTECT, related_name="bookings"
    )
    order_no = models.CharField(verbose_name="订单号", max_length=32, unique=True)
    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="bookings"
    )
    live = models.BooleanField(verbose_name="有效", default=True)
    hold_until = models.DateTimeField(verbose_name="保留至", null=True, blank=True)  # unpaid: the pay deadline
    released_at = models.DateTimeField(verbose_name="释放时间", null=True, blank=True)
    attendance = models.CharField(
        verbose_name="到场", max_length=16, choices=Attendance.choices, default=Attendance.UNMARKED, blank=True
    )
    reschedules = models.PositiveSmallIntegerField(verbose_name="改约次数", default=0)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "预约"
        verbose_name_plural = "预约"
        ordering = ["start", "id"]
        permissions = [("mark_attendance", "可以标记预约到场（老师缺席即全额退款）")]
        constraints = [
            models.CheckConstraint(condition=Q(end__gt=F("start")), name="booking_end_after_start"),
            models.CheckConstraint(condition=Q(blocked_until__gte=F("end")), name="booking_blocked_after_end"),
        ]
        indexes = [models.Index(fields=["teacher", "start"], name="booking_teacher_start_idx")]

    def __str__(self) -> str:
        return f"{self.teacher_id} {timezone.localtime(self.start):%Y-%m-%d %H:%M} ← {self.order_no}"


class Service(models.Model):
    """A consultation product of a teacher and how long it lasts; a teacher's first service
    (lowest ``sort``, then id) is the one the legacy slot list is for."""

    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="services"
    )
    product = models.OneToOneField(
        "catalog.Product", verbose_name="咨询商品", on_delete=models.CASCADE, related_name="service"
    )
    duration_minutes = models.PositiveSmallIntegerField(verbose_name="时长（分钟）", default=60)
    sort = models.IntegerField(verbose_name="排序", default=0)

    class Meta:
        verbose_name = "咨询服务"
        verbose_name_plural = "咨询服务"
        ordering = ["teacher_id", "sort", "id"]
        constraints = [models.CheckConstraint(condition=Q(duration_minutes__gt=0), name="service_duration_positive")]

    def __str__(self) -> str:
        return f"{self.product_id} {self.duration_minutes} 分钟"


class TeacherRules(models.Model):
    """A teacher's booking rules. ``version`` is bumped first by every booking write on SQLite:
    the UPDATE takes the database's write lock, so check-and-insert is serialised."""

    teacher = models.OneToOneField(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="booking_rules"
    )
    buffer_minutes = models.PositiveSmallIntegerField(verbose_name="前后间隔（分钟）", default=0)
    min_notice_minutes = models.PositiveIntegerField(
        verbose_name="最少提前（分钟）", default=default_min_notice_minutes
    )
    horizon_days = models.PositiveSmallIntegerField(verbose_name="可约天数", default=30)
    step_minutes = models.PositiveSmallIntegerField(verbose_name="开始时间间隔（分钟）", default=30)
    daily_max = models.PositiveSmallIntegerField(verbose_name="每日上限", null=True, blank=True)
    version = models.PositiveBigIntegerField(verbose_name="写入版本", default=0)

    class Meta:
        verbose_name = "预约规则"
        verbose_name_plural = "预约规则"
        constraints = [models.CheckConstraint(condition=Q(step_minutes__gt=0), name="rules_step_positive")]

    def __str__(self) -> str:
        return f"{self.teacher_id} 预约规则"


class WeeklyHours(models.Model):
    """The teacher's working windows on one weekday (1 = Monday .. 7 = Sunday), Beijing time:
    ``windows`` = ``[["09:00", "12:00"], ["14:00", "18:00"]]`` (sorted, not overlapping).
    No row (or no windows) = not working that weekday. UNIQUE (teacher, weekday)."""

    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="weekly_hours"
    )
    weekday = models.PositiveSmallIntegerField(verbose_name="星期")
    windows = models.JSONField(verbose_name="时段", default=list, blank=True)

    class Meta:
        verbose_name = "每周工作时间"
        verbose_name_plural = "每周工作时间"
        ordering = ["teacher_id", "weekday"]
        constraints = [
            models.UniqueConstraint(fields=["teacher", "weekday"], name="weeklyhours_teacher_weekday_unique"),
            models.CheckConstraint(condition=Q(weekday__gte=1, weekday__lte=7), name="weeklyhours_weekday_1_7"),
        ]

    def __str__(self) -> str:
        return f"{self.teacher_id} 周{self.weekday}"


class DateOverride(models.Model):
    """One date's hours instead of the weekly ones: ``off`` (not working) or its own ``windows``
    (same shape as :class:`WeeklyHours`). UNIQUE (teacher, date); Beijing dates."""

    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="date_overrides"
    )
    date = models.DateField(verbose_name="日期")
    off = models.BooleanField(verbose_name="休息", default=False)
    windows = models.JSONField(verbose_name="时段", default=list, blank=True)

    class Meta:
        verbose_name = "特殊日期"
        verbose_name_plural = "特殊日期"
        ordering = ["teacher_id", "date"]
        constraints = [models.UniqueConstraint(fields=["teacher", "date"], name="dateoverride_teacher_date_unique")]

    def __str__(self) -> str:
        return f"{self.teacher_id} {self.date:%Y-%m-%d}"


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


class WaitlistEntry(models.Model):
    """A customer waiting for a start of a teacher's service on one full date (Beijing date).

    ``status`` moves only by conditional UPDATEs in ``apps.appointments.waitlist``: waiting ->
    notified (one ``waitlist_open`` message, sent after commit; ``message`` records the send),
    waiting/notified -> booked, expired or cancelled. UNIQUE (customer, teacher, product, date)
    among live entries (waiting or notified): joining again answers the same entry.
    """

    class Status(models.TextChoices):
        WAITING = "waiting", "等待中"
        NOTIFIED = "notified", "已通知"
        BOOKED = "booked", "已预约"
        EXPIRED = "expired", "已过期"
        CANCELLED = "cancelled", "已取消"

    class Message(models.TextChoices):
        NONE = "", "未发送"
        PENDING = "pending", "待发送"
        SENT = "sent", "已发送"
        SKIPPED = "skipped", "未发送（模板关闭或顾客拒收）"
        FAILED = "failed", "发送失败"

    LIVE = (Status.WAITING, Status.NOTIFIED)
    MAX_ATTEMPTS = 5
    LEASE_SECONDS = 60

    customer = models.ForeignKey(
        "accounts.Customer", verbose_name="顾客", on_delete=models.CASCADE, related_name="waitlist_entries"
    )
    teacher = models.ForeignKey(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="waitlist_entries"
    )
    product = models.ForeignKey("catalog.Product", verbose_name="咨询服务", on_delete=models.CASCADE, related_name="+")
    date = models.DateField(verbose_name="日期")
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.WAITING)
    message = models.CharField(
        verbose_name="通知", max_length=16, choices=Message.choices, default=Message.NONE, blank=True
    )
    attempts = models.PositiveSmallIntegerField(verbose_name="发送次数", default=0)
    locked_until = models.DateTimeField(verbose_name="发送租约至", null=True, blank=True)
    last_error = models.CharField(verbose_name="最近错误", max_length=300, blank=True)
    notified_at = models.DateTimeField(verbose_name="通知时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="加入时间", auto_now_add=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        verbose_name = "候补"
        verbose_name_plural = "候补"
        ordering = ["created_at", "id"]
        constraints = [
            models.UniqueConstraint(
                fields=["customer", "teacher", "product", "date"],
                condition=Q(status__in=["waiting", "notified"]),
                name="waitlist_live_unique",
            )
        ]
        indexes = [models.Index(fields=["teacher", "product", "date", "status"], name="waitlist_date_idx")]

    def __str__(self) -> str:
        return f"{self.customer_id} → {self.teacher_id} {self.date:%Y-%m-%d} ({self.status})"


class CalendarFeed(models.Model):
    """A teacher's secret calendar feed: ``token`` (UNIQUE, random) is the only key of its public
    URL; replacing it (``apps.appointments.calendar.feed_token_replace``) makes the old URL 404."""

    teacher = models.OneToOneField(
        "catalog.Teacher", verbose_name="老师", on_delete=models.CASCADE, related_name="calendar_feed"
    )
    token = models.CharField(verbose_name="订阅口令", max_length=64, unique=True)
    updated_at = models.DateTimeField(verbose_name="更新时间", auto_now=True)

    class Meta:
        verbose_name = "日历订阅"
        verbose_name_plural = "日历订阅"

    def __str__(self) -> str:
        return f"{self.teacher_id} 日历订阅"
