"""Group buying (拼团) and bargaining (砍价): activities staff schedule, and what customers hold.

Orders ask marketing at confirm/create and give back on cancel/refund (``apps.marketing.group_buys``,
``apps.marketing.bargains``), never the reverse; the rows here hold the order's ``order_no``
(a string, not a key: marketing sits below orders). The rules for units are the 秒杀's
(``apps/marketing/flash_sales.py`` "Conservation"): an activity's ``stock`` is a quota on the
SKU's stock, taken together with it at create and given back to it while the activity runs.
"""

from django.db import models
from django.db.models import F, Q


class GroupBuy(models.Model):
    """A 拼团 activity: ``sku`` sold at ``price_fen`` (fen) to groups of ``group_size`` customers.

    A group stays open ``hours`` after its leader paid; with ``simulate`` (模拟成团) a group that
    has at least ``simulate_min`` paid members at its deadline is completed instead of failed.
    ``stock``/``sold`` move only by conditional F() UPDATEs in ``apps.marketing.group_buys``.
    """

    title = models.CharField(verbose_name="标题", max_length=64)
    sku = models.ForeignKey("catalog.Sku", verbose_name="SKU", on_delete=models.PROTECT, related_name="group_buys")
    price_fen = models.PositiveIntegerField(verbose_name="拼团价")  # fen per unit
    stock = models.IntegerField(verbose_name="拼团库存")  # units the activity may still sell
    sold = models.IntegerField(verbose_name="已售", default=0)  # units in live orders of the activity
    group_size = models.PositiveIntegerField(verbose_name="成团人数", default=2)
    hours = models.PositiveIntegerField(verbose_name="成团时限（小时）", default=24)  # from the leader's payment
    starts_at = models.DateTimeField(verbose_name="开始时间")
    ends_at = models.DateTimeField(verbose_name="结束时间")  # new groups open while starts_at <= now < ends_at
    limit_per_customer = models.PositiveIntegerField(verbose_name="每人限购", default=1)  # units, live orders
    simulate = models.BooleanField(verbose_name="模拟成团", default=False)
    simulate_min = models.PositiveIntegerField(verbose_name="模拟成团最少人数", default=1)  # paid members
    is_active = models.BooleanField(verbose_name="启用", default=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "拼团活动"
        verbose_name_plural = "拼团活动"
        ordering = ["starts_at", "id"]
        permissions = [("manage_groupbuy", "可以安排和修改拼团、结束拼团")]
        constraints = [
            models.CheckConstraint(condition=Q(stock__gte=0), name="groupbuy_stock_gte_0"),
            models.CheckConstraint(condition=Q(sold__gte=0), name="groupbuy_sold_gte_0"),
            models.CheckConstraint(condition=Q(price_fen__gte=1), name="groupbuy_price_fen_gte_1"),
            models.CheckConstraint(condition=Q(group_size__gte=2), name="groupbuy_size_gte_2"),
            models.CheckConstraint(condition=Q(hours__gte=1), name="groupbuy_hours_gte_1"),
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="groupbuy_ends_after_start"),
            models.CheckConstraint(condition=Q(limit_per_customer__gte=1), name="groupbuy_limit_gte_1"),
        ]

    def __str__(self) -> str:
        return self.title


class Group(models.Model):
    """One group of a 拼团. ``seats``: seats held by live orders (paid or not), never above
    ``group_size`` (a conditional UPDATE at create and the CHECK); ``members``: seats held by
    PAID orders. ``forming`` -> ``done`` in the transaction of the payment that fills the last
    seat, or -> ``failed`` (deadline job, ``group_end``, or the leader's order cancelled before
    paying). ``expires_at`` = leader's payment time + hours (null before it)."""

    class Status(models.TextChoices):
        FORMING = "forming", "拼团中"
        DONE = "done", "已成团"
        FAILED = "failed", "未成团"

    activity = models.ForeignKey(GroupBuy, verbose_name="拼团活动", on_delete=models.PROTECT, related_name="groups")
    leader = models.ForeignKey("accounts.Customer", verbose_name="团长", on_delete=models.PROTECT, related_name="+")
    group_size = models.PositiveIntegerField(verbose_name="成团人数")
    seats = models.IntegerField(verbose_name="已占名额", default=0)
    members = models.IntegerField(verbose_name="已付款人数", default=0)
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.FORMING)
    expires_at = models.DateTimeField(verbose_name="截止时间", null=True, blank=True)
    created_at = models.DateTimeField(verbose_name="开团时间", auto_now_add=True)
    done_at = models.DateTimeField(verbose_name="成团时间", null=True, blank=True)
    failed_at = models.DateTimeField(verbose_name="失败时间", null=True, blank=True)
    ended_by = models.CharField(verbose_name="结束方式", max_length=150, blank=True)  # deadline, staff, simulated
    settled_at = models.DateTimeField(verbose_name="善后完成时间", null=True, blank=True)  # refunds/cancels all asked

    class Meta:
        verbose_name = "拼团"
        verbose_name_plural = "拼团"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(condition=Q(seats__gte=0, seats__lte=F("group_size")), name="group_seats_in_size"),
            models.CheckConstraint(
                condition=Q(members__gte=0, members__lte=F("group_size")), name="group_members_in_size"
            ),
        ]
        indexes = [models.Index(fields=["status", "expires_at"], name="group_status_expires_idx")]

    def __str__(self) -> str:
        return f"拼团 #{self.pk}"


class GroupSeat(models.Model):
    """A customer's seat in a group, held by one order (``order_no``, UNIQUE). ``held`` (unpaid)
    -> ``paid``; -> ``released`` when the order is cancelled; -> ``refunded`` when it is fully
    refunded. Nobody holds two live seats in one group: UNIQUE (group, customer) over seats
    not released."""

    class Status(models.TextChoices):
        HELD = "held", "待付款"
        PAID = "paid", "已付款"
        RELEASED = "released", "已释放"
        REFUNDED = "refunded", "已退款"

    group = models.ForeignKey(Group, verbose_name="拼团", on_delete=models.CASCADE, related_name="seats_held")
    customer = models.ForeignKey("accounts.Customer", verbose_name="顾客", on_delete=models.PROTECT, related_name="+")
    order_no = models.CharField(verbose_name="订单号", max_length=32, unique=True)
    units = models.PositiveIntegerField(verbose_name="件数", default=1)
    leader = models.BooleanField(verbose_name="团长", default=False)
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.HELD)
    created_at = models.DateTimeField(verbose_name="参团时间", auto_now_add=True)
    paid_at = models.DateTimeField(verbose_name="付款时间", null=True, blank=True)

    class Meta:
        verbose_name = "拼团成员"
        verbose_name_plural = "拼团成员"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(
                fields=["group", "customer"],
                condition=~Q(status="released"),
                name="groupseat_one_live_seat_per_customer",
            ),
        ]

    def __str__(self) -> str:
        return f"{self.group_id}/{self.order_no}"


class BargainCampaign(models.Model):
    """A 砍价 campaign: ``sku`` from ``original_price_fen`` down to ``floor_price_fen`` (fen) in
    ``helpers_needed`` helps, each record open ``hours`` after it starts; ``stock``/``sold`` as a
    秒杀's quota; a customer buys at most ``limit_per_customer`` records."""

    title = models.CharField(verbose_name="标题", max_length=64)
    sku = models.ForeignKey("catalog.Sku", verbose_name="SKU", on_delete=models.PROTECT, related_name="bargains")
    original_price_fen = models.PositiveIntegerField(verbose_name="原价")
    floor_price_fen = models.PositiveIntegerField(verbose_name="底价")
    helpers_needed = models.PositiveIntegerField(verbose_name="砍到底价所需人数", default=3)
    hours = models.PositiveIntegerField(verbose_name="砍价时限（小时）", default=24)
    starts_at = models.DateTimeField(verbose_name="开始时间")
    ends_at = models.DateTimeField(verbose_name="结束时间")
    stock = models.IntegerField(verbose_name="砍价库存")
    sold = models.IntegerField(verbose_name="已售", default=0)
    limit_per_customer = models.PositiveIntegerField(verbose_name="每人限购", default=1)
    is_active = models.BooleanField(verbose_name="启用", default=True)
    created_at = models.DateTimeField(verbose_name="创建时间", auto_now_add=True)

    class Meta:
        verbose_name = "砍价活动"
        verbose_name_plural = "砍价活动"
        ordering = ["starts_at", "id"]
        permissions = [("manage_bargain", "可以安排和修改砍价")]
        constraints = [
            models.CheckConstraint(condition=Q(stock__gte=0), name="bargain_stock_gte_0"),
            models.CheckConstraint(condition=Q(sold__gte=0), name="bargain_sold_gte_0"),
            models.CheckConstraint(condition=Q(floor_price_fen__gte=1), name="bargain_floor_gte_1"),
            models.CheckConstraint(condition=Q(helpers_needed__gte=1), name="bargain_helpers_gte_1"),
            # every help cuts at least 1 fen
            models.CheckConstraint(
                condition=Q(original_price_fen__gte=F("floor_price_fen") + F("helpers_needed")),
                name="bargain_room_for_every_cut",
            ),
            models.CheckConstraint(condition=Q(ends_at__gt=F("starts_at")), name="bargain_ends_after_start"),
            models.CheckConstraint(condition=Q(limit_per_customer__gte=1), name="bargain_limit_gte_1"),
        ]

    def __str__(self) -> str:
        return self.title


class BargainRecord(models.Model):
    """One customer's bargain in a campaign. ``price_fen`` goes down with each help and reaches
    ``floor_price_fen`` exactly with the ``helpers_needed``-th; ``open`` -> ``bought`` (an order
    was created at the current price; back to ``open`` if that order is cancelled) or
    ``expired``. One open record per customer and campaign (UNIQUE over open records)."""

    class Status(models.TextChoices):
        OPEN = "open", "砍价中"
        BOUGHT = "bought", "已购买"
        EXPIRED = "expired", "已过期"

    bargain_no = models.CharField(verbose_name="砍价编号", max_length=32, unique=True)
    campaign = models.ForeignKey(
        BargainCampaign, verbose_name="砍价活动", on_delete=models.PROTECT, related_name="records"
    )
    customer = models.ForeignKey("accounts.Customer", verbose_name="发起人", on_delete=models.PROTECT, related_name="+")
    price_fen = models.PositiveIntegerField(verbose_name="当前价")
    floor_price_fen = models.PositiveIntegerField(verbose_name="底价")
    helpers = models.PositiveIntegerField(verbose_name="已助力人数", default=0)
    helpers_needed = models.PositiveIntegerField(verbose_name="所需人数")
    status = models.CharField(verbose_name="状态", max_length=16, choices=Status.choices, default=Status.OPEN)
    expires_at = models.DateTimeField(verbose_name="截止时间")
    order_no = models.CharField(verbose_name="订单号", max_length=32, blank=True)
    created_at = models.DateTimeField(verbose_name="发起时间", auto_now_add=True)
    bought_at = models.DateTimeField(verbose_name="购买时间", null=True, blank=True)

    class Meta:
        verbose_name = "砍价记录"
        verbose_name_plural = "砍价记录"
        ordering = ["-id"]
        constraints = [
            models.UniqueConstraint(
                fields=["campaign", "customer"], condition=Q(status="open"), name="bargainrecord_one_open_per_customer"
            ),
            models.CheckConstraint(
                condition=Q(price_fen__gte=F("floor_price_fen")), name="bargainrecord_price_gte_floor"
            ),
            models.CheckConstraint(
                condition=Q(helpers__lte=F("helpers_needed")), name="bargainrecord_helpers_lte_needed"
            ),
        ]
        indexes = [models.Index(fields=["status", "expires_at"], name="bargainrecord_status_exp_idx")]

    def __str__(self) -> str:
        return self.bargain_no


class BargainHelp(models.Model):
    """One friend's cut on a record: UNIQUE (record, helper); ``day`` is the Shanghai date."""

    record = models.ForeignKey(BargainRecord, verbose_name="砍价记录", on_delete=models.CASCADE, related_name="helps")
    helper = models.ForeignKey("accounts.Customer", verbose_name="助力人", on_delete=models.PROTECT, related_name="+")
    cut_fen = models.PositiveIntegerField(verbose_name="砍掉金额")
    day = models.DateField(verbose_name="日期")
    created_at = models.DateTimeField(verbose_name="助力时间", auto_now_add=True)

    class Meta:
        verbose_name = "砍价助力"
        verbose_name_plural = "砍价助力"
        ordering = ["id"]
        constraints = [
            models.UniqueConstraint(fields=["record", "helper"], name="bargainhelp_once_per_helper"),
            models.CheckConstraint(condition=Q(cut_fen__gte=1), name="bargainhelp_cut_gte_1"),
        ]

    def __str__(self) -> str:
        return f"{self.record_id}/{self.helper_id}: {self.cut_fen}"


class BargainHelperDay(models.Model):
    """How many records one customer helped on one Shanghai day: UNIQUE (helper, day); grows by
    ``UPDATE ... SET count = count + 1 WHERE count < BARGAIN_HELPS_PER_DAY``."""

    helper = models.ForeignKey("accounts.Customer", verbose_name="助力人", on_delete=models.CASCADE, related_name="+")
    day = models.DateField(verbose_name="日期")
    count = models.PositiveIntegerField(verbose_name="次数", default=0)

    class Meta:
        verbose_name = "每日助力次数"
        verbose_name_plural = "每日助力次数"
        constraints = [models.UniqueConstraint(fields=["helper", "day"], name="bargainhelperday_uniq")]

    def __str__(self) -> str:
        return f"{self.helper_id} {self.day}: {self.count}"
