"""Group buying (拼团): staff schedule activities; orders open and join groups, pay, give back.

Orders ask marketing, never the reverse: ``order_confirm`` calls :func:`group_check`,
``order_create`` :func:`group_take`, ``order_mark_paid`` :func:`group_seat_paid`, cancel and full
refund :func:`group_give_back`; ``apps.payments.group_refunds`` settles a failed group after
:func:`group_fail`. ``Group.seats`` grows only by a conditional UPDATE (CHECK ``seats <= group_size``),
so racing joiners never overfill a group. Units follow the 秒杀's rule (``apps/marketing/flash_sales.py``
"Conservation"). Lock order (``starmall/locking.py`` step 6): group, then activity; SKUs (7) after.
"""

from __future__ import annotations

import datetime as dt

from django.db import IntegrityError, transaction
from django.db.models import Case, F, Q, Sum, Value, When
from django.utils import timezone

from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing.models import Group, GroupBuy, GroupSeat
from starmall.errors import InvalidInput, InvalidState, LimitExceeded, NotFound

MAX_WINDOW = dt.timedelta(days=92)
MAX_HOURS = 24 * 7  # a group stays open at most a week after its leader paid
MAX_SIZE = 50
LIVE_SEATS = (GroupSeat.Status.HELD, GroupSeat.Status.PAID)


def group_buy_is_live(activity: GroupBuy, now: dt.datetime | None = None) -> bool:
    """True while new groups may open: active and ``starts_at <= now < ends_at``."""
    now = now or timezone.now()
    return activity.is_active and activity.starts_at <= now < activity.ends_at


# --- orders ask (confirm, create, pay, cancel/refund, ship) --------------------------------


def group_check(
    *,
    customer_id: int,
    quantities: dict[int, int],
    group_buy_id: int | None = None,
    group_id: int | None = None,
    now: dt.datetime | None = None,
) -> GroupBuy:
    """Confirm (phase 1) of a 拼团 order: ``group_buy_id`` opens a new group (the caller as its
    leader), ``group_id`` joins one. Returns the activity whose ``price_fen`` the order takes.

    ``quantities``: {sku_id: units}, exactly the activity's SKU. Reads only. Raises NotFound,
    InvalidInput (``items``), InvalidState (activity not live; group not forming, full, expired,
    its leader not paid yet; the caller already holds a seat in it), InsufficientStock (the
    activity's stock), LimitExceeded (the caller's units in live orders of the activity plus
    these pass ``limit_per_customer``).
    """
    now = now or timezone.now()
    group = None
    if group_id is not None:
        group = Group.objects.select_related("activity").filter(pk=group_id).first()
        if group is None:
            raise NotFound("没有这个拼团。", group_id=group_id)
        activity = group.activity
    else:
        activity = GroupBuy.objects.filter(pk=group_buy_id).first()
        if activity is None:
            raise NotFound("没有这个拼团活动。", group_buy_id=group_buy_id)
    if list(quantities) != [activity.sku_id]:
        raise InvalidInput(items=["拼团订单只能包含该活动的一个商品规格"])
    if group is None:
        if not group_buy_is_live(activity, now):
            raise InvalidState("拼团活动不在进行中。", group_buy_id=activity.pk)
    else:
        _joinable_or_raise(group, customer_id, now)
    units = quantities[activity.sku_id]
    if activity.stock < units:
        raise InsufficientStock(
            "拼团商品已抢完。",
            group_buy_id=activity.pk,
            sku_id=activity.sku_id,
            requested=units,
            available=activity.stock,
        )
    _limit_check(activity, customer_id, units)
    return activity


def _joinable_or_raise(group: Group, customer_id: int, now: dt.datetime) -> None:
    if group.status != Group.Status.FORMING:
        raise InvalidState("该拼团已结束。", group_id=group.pk, status=group.status)
    if group.expires_at is None:
        raise InvalidState("团长尚未付款，暂不能参团。", group_id=group.pk)
    if group.expires_at <= now:
        raise InvalidState("该拼团已过期。", group_id=group.pk)
    if group.seats >= group.group_size:
        raise InvalidState("该拼团已满员。", group_id=group.pk)
    if (
        group.leader_id == customer_id
        or GroupSeat.objects.filter(group=group, customer_id=customer_id, status__in=LIVE_SEATS).exists()
    ):
        raise InvalidState("您已在这个拼团中。", group_id=group.pk)


def _limit_check(activity: GroupBuy, customer_id: int, units: int) -> None:
    """The customer's units in live orders (seats held or paid) of the activity plus ``units``
    must not pass ``limit_per_customer``. In create it runs under the customer's row lock
    (``order_create``'s caps, step 5), so one customer's racing creates count one another."""
    held = (
        GroupSeat.objects.filter(group__activity=activity, customer_id=customer_id, status__in=LIVE_SEATS).aggregate(
            n=Sum("units")
        )["n"]
        or 0
    )
    if held + units > activity.limit_per_customer:
        raise LimitExceeded(
            "已超过本次拼团的限购数量。",
            group_buy_id=activity.pk,
            limit_per_customer=activity.limit_per_customer,
            held=held,
            requested=units,
        )


@transaction.atomic(savepoint=False)
def group_take(
    *,
    customer_id: int,
    order_no: str,
    units: int,
    group_buy_id: int | None = None,
    group_id: int | None = None,
    now: dt.datetime | None = None,
) -> int:
    """Create (phase 2), in the order's transaction: the seat and the activity's units; returns
    the group's id (a new group for ``group_buy_id``). The caller takes the SKU's units after.

    Join: ``UPDATE group SET seats = seats + 1 WHERE id = ? AND status = 'forming' AND seats <
    group_size AND expires_at > now`` (0 rows -> InvalidState: full, ended or expired), then the
    seat INSERT (UNIQUE live seat per customer -> InvalidState). Then, both: ``UPDATE activity
    SET stock = stock - n, sold = sold + n WHERE stock >= n`` (InsufficientStock). Raises as
    :func:`group_check`; on any error the caller's transaction rolls everything back.
    """
    if units <= 0:
        raise ValueError(f"units must be positive, got {units}")
    now = now or timezone.now()
    if group_id is not None:
        group = Group.objects.select_related("activity").get(pk=group_id)
        activity = group.activity
        _limit_check(activity, customer_id, units)
        if group.leader_id == customer_id:
            raise InvalidState("您已在这个拼团中。", group_id=group_id)
        if (
            Group.objects.filter(
                pk=group_id, status=Group.Status.FORMING, seats__lt=F("group_size"), expires_at__gt=now
            ).update(seats=F("seats") + 1)
            != 1
        ):
            raise InvalidState("该拼团已满员或已结束。", group_id=group_id)
        try:
            with transaction.atomic():
                GroupSeat.objects.create(group_id=group_id, customer_id=customer_id, order_no=order_no, units=units)
        except IntegrityError as exc:
            raise InvalidState("您已在这个拼团中。", group_id=group_id) from exc
        _activity_take(activity.pk, units, now, live_only=False)
        return group_id
    activity = GroupBuy.objects.get(pk=group_buy_id)
    _limit_check(activity, customer_id, units)
    _activity_take(activity.pk, units, now, live_only=True)
    # A leader's create inserts its group: a new row nobody waits for (lock order: the module).
    group = Group.objects.create(activity=activity, leader_id=customer_id, group_size=activity.group_size, seats=1)
    GroupSeat.objects.create(group=group, customer_id=customer_id, order_no=order_no, units=units, leader=True)
    return group.pk


def _activity_take(activity_id: int, units: int, now: dt.datetime, *, live_only: bool) -> None:
    """The activity's quota: conditional on stock (and, opening a group, on the window)."""
    qs = GroupBuy.objects.filter(pk=activity_id, is_active=True, stock__gte=units)
    if live_only:
        qs = qs.filter(starts_at__lte=now, ends_at__gt=now)
    if qs.update(stock=F("stock") - units, sold=F("sold") + units) != 1:
        activity = GroupBuy.objects.get(pk=activity_id)
        if live_only and not group_buy_is_live(activity, now):
            raise InvalidState("拼团活动不在进行中。", group_buy_id=activity_id)
        raise InsufficientStock(
            "拼团商品已抢完。",
            group_buy_id=activity_id,
            sku_id=activity.sku_id,
            requested=units,
            available=activity.stock,
        )


@transaction.atomic(savepoint=False)
def group_seat_paid(*, group_id: int, order_no: str, paid_at: dt.datetime) -> str:
    """The order holding a seat was paid: called in the paying transaction (``order_mark_paid``,
    after the order's ``unpaid -> paid``), so a group is ``done`` in the same transaction as the
    payment that fills its last seat. Returns the group's status afterwards.

    ``held -> paid`` on the seat, then one conditional UPDATE of the forming group: ``members + 1``,
    the leader's payment sets ``expires_at = paid_at + hours``, and ``members + 1 = group_size``
    makes it ``done`` — only while ``expires_at`` has not passed at ``paid_at``. A group that
    already failed (the deadline job won the row) is left failed: the job's settling refunds
    this member like every other (``apps.payments.group_refunds``).
    """
    seat = GroupSeat.objects.filter(order_no=order_no).select_related("group__activity").first()
    if (
        seat is None
        or GroupSeat.objects.filter(pk=seat.pk, status=GroupSeat.Status.HELD).update(
            status=GroupSeat.Status.PAID, paid_at=paid_at
        )
        != 1
    ):
        return Group.objects.values_list("status", flat=True).get(pk=group_id)
    hours = dt.timedelta(hours=seat.group.activity.hours)
    fills = Q(members=F("group_size") - 1)
    updates = {
        "members": F("members") + 1,
        "status": Case(When(fills, then=Value(Group.Status.DONE)), default=F("status")),
        "done_at": Case(When(fills, then=Value(paid_at)), default=F("done_at")),
        "settled_at": Case(When(fills, then=Value(paid_at)), default=F("settled_at")),
    }
    qs = Group.objects.filter(pk=group_id, status=Group.Status.FORMING)
    if seat.leader:
        qs = qs.filter(expires_at__isnull=True)
        updates["expires_at"] = Value(paid_at + hours)
    else:
        qs = qs.filter(expires_at__gt=paid_at)
    qs.update(**updates)
    return Group.objects.values_list("status", flat=True).get(pk=group_id)


@transaction.atomic(savepoint=False)
def group_give_back(*, group_id: int, order_no: str, units: int, restock: bool, now: dt.datetime | None = None) -> None:
    """The order holding a seat stopped being live (cancelled, or fully refunded); once per order,
    under the caller's conditional order transition, in its transaction.

    An unpaid seat is released (``held -> released``; a forming group's ``seats - 1``; a leader
    who never paid fails the group, which nobody could join yet); a paid one becomes
    ``refunded`` (a forming group's ``seats - 1, members - 1``). With ``restock`` the
    activity's ``sold -= units`` and, while it runs, ``stock += units`` (the SKU's units are the
    caller's business). Group row, then activity row (step 6).
    """
    now = now or timezone.now()
    seat = GroupSeat.objects.filter(order_no=order_no).first()
    if seat is not None:
        forming = Group.objects.filter(pk=group_id, status=Group.Status.FORMING, seats__gte=1)
        if (
            GroupSeat.objects.filter(pk=seat.pk, status=GroupSeat.Status.HELD).update(status=GroupSeat.Status.RELEASED)
            == 1
        ):
            if seat.leader:
                Group.objects.filter(pk=group_id, status=Group.Status.FORMING, expires_at__isnull=True).update(
                    status=Group.Status.FAILED, failed_at=now, ended_by="团长未付款", seats=F("seats") - 1
                )
            forming.update(seats=F("seats") - 1)
        elif (
            GroupSeat.objects.filter(pk=seat.pk, status=GroupSeat.Status.PAID).update(status=GroupSeat.Status.REFUNDED)
            == 1
        ):
            forming.filter(members__gte=1).update(seats=F("seats") - 1, members=F("members") - 1)
    if restock:
        activity_id = Group.objects.values_list("activity_id", flat=True).get(pk=group_id)
        GroupBuy.objects.filter(pk=activity_id, sold__gte=units).update(
            sold=F("sold") - units,
            stock=Case(When(ends_at__gt=now, then=F("stock") + units), default=F("stock")),
        )


def group_ship_refusal(*, group_id: int) -> str | None:
    """Why an order of this group cannot be shipped yet (Chinese), or None once it is ``done``."""
    status = Group.objects.values_list("status", flat=True).filter(pk=group_id).first()
    if status == Group.Status.DONE:
        return None
    if status == Group.Status.FAILED:
        return "拼团未成团，订单将全额退款，不能发货"
    return "拼团尚未成团（等待好友参团付款），成团后才能发货"


# --- the deadline (asked by apps.payments.group_refunds) -------------------------------------


def groups_due(*, now: dt.datetime | None = None, limit: int = 200) -> list[int]:
    """Ids of forming groups whose deadline has passed, oldest deadline first."""
    now = now or timezone.now()
    return list(
        Group.objects.filter(status=Group.Status.FORMING, expires_at__lte=now)
        .order_by("expires_at", "pk")
        .values_list("pk", flat=True)[:limit]
    )


def groups_unsettled(*, limit: int = 200) -> list[int]:
    """Ids of ended groups whose members' refunds and unpaid seats' cancels are not all asked yet."""
    return list(
        Group.objects.exclude(status=Group.Status.FORMING)
        .filter(settled_at__isnull=True)
        .order_by("pk")
        .values_list("pk", flat=True)[:limit]
    )


@transaction.atomic
def group_fail(*, group_id: int, actor: str, now: dt.datetime | None = None, force: bool = False) -> str | None:
    """End a forming group: at its deadline (``force=False``: only once ``expires_at <= now``) or
    now (``force=True``: staff, ``manage.py group_end``). Returns ``"failed"``, ``"done"`` (模拟成团:
    the activity completes groups with at least ``simulate_min`` paid members) or None when it
    was not forming (any more) or not due — a second run, or another machine, finds nothing.

    One conditional UPDATE ``WHERE status = 'forming'`` decides against the payment filling the
    last seat (which needs the same row forming): either the group is done or it failed, never
    both. The refunds and cancels follow in ``apps.payments.group_refunds``.
    """
    now = now or timezone.now()
    group = Group.objects.select_related("activity").filter(pk=group_id).first()
    if group is None:
        return None
    qs = Group.objects.filter(pk=group_id, status=Group.Status.FORMING)
    if not force:
        qs = qs.filter(expires_at__lte=now)
    activity = group.activity
    if (
        activity.simulate
        and qs.filter(members__gte=max(1, activity.simulate_min)).update(
            status=Group.Status.DONE, done_at=now, ended_by=f"模拟成团（{actor}）"
        )
        == 1
    ):
        return "done"
    if qs.update(status=Group.Status.FAILED, failed_at=now, ended_by=actor) == 1:
        return "failed"
    return None


def group_seats_to_settle(*, group_id: int) -> list[GroupSeat]:
    """The seats of an ended group that still hold something: unpaid (to cancel) or paid (of a
    failed group: to refund)."""
    group = Group.objects.get(pk=group_id)
    statuses = [GroupSeat.Status.HELD]
    if group.status == Group.Status.FAILED:
        statuses.append(GroupSeat.Status.PAID)
    return list(GroupSeat.objects.filter(group_id=group_id, status__in=statuses).order_by("pk"))


def group_mark_settled(*, group_id: int, now: dt.datetime | None = None) -> bool:
    """Every refund and cancel an ended group owed has been asked: it leaves the settling sweep."""
    return (
        Group.objects.filter(pk=group_id, settled_at__isnull=True)
        .exclude(status=Group.Status.FORMING)
        .update(settled_at=now or timezone.now())
        == 1
    )


# --- staff (admin) -------------------------------------------------------------------------


def group_buy_validate(
    *,
    sku: Sku | None,
    price_fen: int | None,
    stock: int | None,
    group_size: int | None,
    hours: int | None,
    starts_at: dt.datetime | None,
    ends_at: dt.datetime | None,
    limit_per_customer: int | None,
    simulate: bool = False,
    simulate_min: int | None = 1,
    activity: GroupBuy | None = None,
    now: dt.datetime | None = None,
) -> None:
    """The scheduling rules, all at once: raises InvalidInput whose ``detail`` maps each field to
    its problems. ``activity``: the one being changed (SKU and stock are then not checked)."""
    now = now or timezone.now()
    errors: dict[str, list[str]] = {}
    if activity is None and (
        sku is None or not sku.is_active or sku.product.kind != Kind.GOODS or not sku.product.is_active
    ):
        errors["sku"] = ["请选择在售的实物商品规格（咨询预约不能拼团）"]
    if price_fen is None or price_fen < 1:
        errors["price_fen"] = ["拼团价至少 1 分"]
    elif sku is not None and price_fen > sku.price_fen:
        errors["price_fen"] = [f"拼团价不能高于原价 {sku.price_fen} 分"]
    if group_size is None or not 2 <= group_size <= MAX_SIZE:
        errors["group_size"] = [f"成团人数须在 2 到 {MAX_SIZE} 之间"]
    if hours is None or not 1 <= hours <= MAX_HOURS:
        errors["hours"] = [f"成团时限须在 1 到 {MAX_HOURS} 小时之间"]
    if starts_at is None or ends_at is None:
        errors["starts_at"] = ["请填写开始和结束时间（上海时间）"]
    elif ends_at <= starts_at:
        errors["ends_at"] = ["结束时间必须晚于开始时间"]
    elif ends_at - starts_at > MAX_WINDOW:
        errors["ends_at"] = [f"一次拼团活动最长 {MAX_WINDOW.days} 天"]
    elif activity is None and ends_at <= now:
        errors["ends_at"] = ["结束时间已过"]
    if limit_per_customer is None or limit_per_customer < 1:
        errors["limit_per_customer"] = ["每人限购至少 1 件"]
    if simulate and (simulate_min is None or not 1 <= simulate_min < (group_size or 2)):
        errors["simulate_min"] = ["模拟成团最少人数须至少 1，且小于成团人数"]
    if activity is None and sku is not None and "sku" not in errors and (stock is None or not 1 <= stock <= sku.stock):
        errors["stock"] = [f"拼团库存须在 1 到该规格当前库存 {sku.stock} 之间"]
    if errors:
        raise InvalidInput(**errors)


@transaction.atomic
def group_buy_schedule(
    *,
    title: str,
    sku_id: int,
    price_fen: int,
    stock: int,
    group_size: int,
    hours: int,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    limit_per_customer: int = 1,
    simulate: bool = False,
    simulate_min: int = 1,
    is_active: bool = True,
) -> GroupBuy:
    """Staff schedule a 拼团 activity (prices fen, times aware Shanghai); rules in
    :func:`group_buy_validate` (InvalidInput)."""
    sku = Sku.objects.select_related("product").filter(pk=sku_id).first()
    group_buy_validate(
        sku=sku,
        price_fen=price_fen,
        stock=stock,
        group_size=group_size,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        simulate=simulate,
        simulate_min=simulate_min,
    )
    return GroupBuy.objects.create(
        title=title,
        sku=sku,
        price_fen=price_fen,
        stock=stock,
        group_size=group_size,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        simulate=simulate,
        simulate_min=simulate_min,
        is_active=is_active,
    )


@transaction.atomic
def group_buy_update(
    *,
    activity_id: int,
    title: str,
    price_fen: int,
    hours: int,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    limit_per_customer: int,
    simulate: bool,
    simulate_min: int,
    is_active: bool,
) -> GroupBuy:
    """Staff change an activity's terms (never its SKU, stock, sold or group size: groups opened
    keep their size; stock changes are :func:`group_buy_stock_adjust`)."""
    activity = GroupBuy.objects.get(pk=activity_id)
    group_buy_validate(
        sku=Sku.objects.get(pk=activity.sku_id),
        price_fen=price_fen,
        stock=None,
        group_size=activity.group_size,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        simulate=simulate,
        simulate_min=simulate_min,
        activity=activity,
    )
    GroupBuy.objects.filter(pk=activity_id).update(
        title=title,
        price_fen=price_fen,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        simulate=simulate,
        simulate_min=simulate_min,
        is_active=is_active,
    )
    return GroupBuy.objects.get(pk=activity_id)


def group_buy_stock_adjust(*, activity_id: int, delta: int) -> int:
    """Staff add (+) or withdraw (-) units of the activity's quota (relative, conditional);
    returns the new stock; withdrawing more than is left raises InsufficientStock."""
    qs = GroupBuy.objects.filter(pk=activity_id)
    if delta < 0:
        qs = qs.filter(stock__gte=-delta)
    if qs.update(stock=F("stock") + delta) != 1:
        raise InsufficientStock("不能减去比剩余拼团库存更多的数量。", group_buy_id=activity_id)
    return GroupBuy.objects.values_list("stock", flat=True).get(pk=activity_id)
