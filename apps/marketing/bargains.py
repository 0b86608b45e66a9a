"""Bargaining (砍价): a customer starts a record, friends cut its price, the customer buys it once.

Cuts are random, at least 1 fen each; the ``helpers_needed``-th help reaches ``floor_price_fen``
exactly, also under racing helpers (:func:`bargain_help` locks the record). One help per helper
per record (UNIQUE), at most ``BARGAIN_HELPS_PER_DAY`` records per helper per Shanghai day, never
one's own. Buying is an ordinary order (confirm with ``bargain_no``): :func:`bargain_check`,
:func:`bargain_take` (create), :func:`bargain_give_back` (cancel, full refund; units as a 秒杀's,
``apps/marketing/flash_sales.py`` "Conservation"); beat's :func:`bargains_expire_due` closes
records past ``expires_at``. Lock order (``starmall/locking.py`` step 6): record, campaign; SKUs after.
"""

from __future__ import annotations

import datetime as dt
import random
import secrets

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Case, F, Value, When
from django.utils import timezone

from apps.catalog.exceptions import InsufficientStock
from apps.catalog.models import Kind, Sku
from apps.marketing import selectors
from apps.marketing.models import BargainCampaign, BargainHelp, BargainHelperDay, BargainRecord
from starmall.errors import InvalidInput, InvalidState, LimitExceeded, NotFound

MAX_WINDOW = dt.timedelta(days=92)
MAX_HOURS = 24 * 7
_random = random.SystemRandom()


def bargain_is_live(campaign: BargainCampaign, now: dt.datetime | None = None) -> bool:
    """True while records may start: active and ``starts_at <= now < ends_at``."""
    now = now or timezone.now()
    return campaign.is_active and campaign.starts_at <= now < campaign.ends_at


def _new_bargain_no(now: dt.datetime) -> str:
    """``B`` + ``yyyyMMddHHmmss`` (Shanghai) + 8 random digits (23 characters)."""
    return "B" + timezone.localtime(now).strftime("%Y%m%d%H%M%S") + f"{secrets.randbelow(10**8):08d}"


# --- customers ---------------------------------------------------------------------------------


def bargain_start(*, campaign_id: int, customer_id: int, now: dt.datetime | None = None) -> tuple[BargainRecord, bool]:
    """Start the customer's record in a campaign; returns ``(record, created)``.

    The customer's record still open -> ``(that record, False)`` (one open record per customer
    and campaign: UNIQUE over open records; a racing second start meets it and returns the
    winner). Raises NotFound, InvalidState (campaign not live), LimitExceeded (the customer
    bought ``limit_per_customer`` records already), InsufficientStock (none left).
    """
    now = now or timezone.now()
    campaign = BargainCampaign.objects.filter(pk=campaign_id).first()
    if campaign is None:
        raise NotFound("没有这个砍价活动。", bargain_id=campaign_id)
    bargains_expire_due(now=now, campaign_id=campaign_id, customer_id=customer_id)
    existing = BargainRecord.objects.filter(
        campaign=campaign, customer_id=customer_id, status=BargainRecord.Status.OPEN
    ).first()
    if existing is not None:
        return existing, False
    if not bargain_is_live(campaign, now):
        raise InvalidState("砍价活动不在进行中。", bargain_id=campaign_id)
    bought = BargainRecord.objects.filter(
        campaign=campaign, customer_id=customer_id, status=BargainRecord.Status.BOUGHT
    ).count()
    if bought >= campaign.limit_per_customer:
        raise LimitExceeded(
            "已达到本次砍价的限购数量。", bargain_id=campaign_id, limit_per_customer=campaign.limit_per_customer
        )
    if campaign.stock < 1:
        raise InsufficientStock("砍价商品已抢完。", bargain_id=campaign_id, sku_id=campaign.sku_id)
    try:
        with transaction.atomic():
            record = BargainRecord.objects.create(
                bargain_no=_new_bargain_no(now),
                campaign=campaign,
                customer_id=customer_id,
                price_fen=campaign.original_price_fen,
                floor_price_fen=campaign.floor_price_fen,
                helpers_needed=campaign.helpers_needed,
                expires_at=now + dt.timedelta(hours=campaign.hours),
            )
    except IntegrityError:
        winner = BargainRecord.objects.filter(
            campaign=campaign, customer_id=customer_id, status=BargainRecord.Status.OPEN
        ).first()
        if winner is None:
            raise
        return winner, False
    return record, True


def bargain_cut(*, price_fen: int, floor_fen: int, helpers: int, helpers_needed: int) -> int:
    """The next help's cut in fen: what is left above the floor on the last needed help; before
    it, random in ``[1, min(left - still_needed_after, 2 * average)]`` so every later help can
    still cut at least 1 fen."""
    left = price_fen - floor_fen
    remaining_helps = helpers_needed - helpers
    if remaining_helps <= 1:
        return left
    most = left - (remaining_helps - 1)  # leave 1 fen for each help still to come
    average = left // remaining_helps
    return _random.randint(1, max(1, min(most, 2 * average)))


@transaction.atomic
def bargain_help(*, bargain_no: str, helper_id: int, now: dt.datetime | None = None) -> dict:
    """A friend cuts the record's price; returns ``{"cut_fen", "price_fen"}`` (fen).

    Raises NotFound, InvalidState (one's own record; not open, expired, or already at the
    floor), LimitExceeded (helped this record already; ``BARGAIN_HELPS_PER_DAY`` records helped
    today, Shanghai). In one transaction: lock the record, insert the help (UNIQUE), count the
    helper's day (conditional), write the new price and count under ``WHERE helpers = <read>``.
    """
    now = now or timezone.now()
    # The row lock before reading price and count: racing helpers cut one after another, so the
    # last needed help still lands exactly on the floor.
    record = BargainRecord.objects.select_for_update().filter(bargain_no=bargain_no).first()
    if record is None:
        raise NotFound("没有这个砍价。", bargain_no=bargain_no)
    if record.customer_id == helper_id:
        raise InvalidState("不能给自己砍价。", bargain_no=bargain_no)
    if BargainHelp.objects.filter(record=record, helper_id=helper_id).exists():
        raise LimitExceeded("您已经帮这位好友砍过了。", bargain_no=bargain_no)
    if record.status != BargainRecord.Status.OPEN or record.expires_at <= now:
        raise InvalidState("该砍价已结束。", bargain_no=bargain_no, status=record.status)
    if record.helpers >= record.helpers_needed or record.price_fen <= record.floor_price_fen:
        raise InvalidState("已经砍到底价了。", bargain_no=bargain_no)
    day = timezone.localdate(now)
    cut = bargain_cut(
        price_fen=record.price_fen,
        floor_fen=record.floor_price_fen,
        helpers=record.helpers,
        helpers_needed=record.helpers_needed,
    )
    try:
        with transaction.atomic():
            BargainHelp.objects.create(record=record, helper_id=helper_id, cut_fen=cut, day=day)
    except IntegrityError as exc:
        raise LimitExceeded("您已经帮这位好友砍过了。", bargain_no=bargain_no) from exc
    limit = settings.BARGAIN_HELPS_PER_DAY
    BargainHelperDay.objects.bulk_create([BargainHelperDay(helper_id=helper_id, day=day)], ignore_conflicts=True)
    if BargainHelperDay.objects.filter(helper_id=helper_id, day=day, count__lt=limit).update(count=F("count") + 1) != 1:
        raise LimitExceeded(f"每天最多帮 {limit} 位好友砍价。", bargains_per_day=limit)
    if (
        BargainRecord.objects.filter(pk=record.pk, helpers=record.helpers, status=BargainRecord.Status.OPEN).update(
            helpers=F("helpers") + 1, price_fen=F("price_fen") - cut
        )
        != 1
    ):
        raise InvalidState("该砍价已变化，请重试。", bargain_no=bargain_no)  # cannot happen under the row lock
    return {"cut_fen": cut, "price_fen": record.price_fen - cut}


def bargain_json(record: BargainRecord) -> dict:
    """The record as API.md shows it (public: a shared link shows it)."""
    helps = record.helps.select_related("helper").order_by("pk")
    return {
        "bargain_no": record.bargain_no,
        "bargain_id": record.campaign_id,
        "price_fen": record.price_fen,
        "floor_price_fen": record.floor_price_fen,
        "helpers": record.helpers,
        "helpers_needed": record.helpers_needed,
        "expires_at": timezone.localtime(record.expires_at).isoformat(),
        "status": record.status,
        "helps": [{"nickname": h.helper.nickname, "cut_fen": h.cut_fen} for h in helps],
    }


def bargain_get(*, bargain_no: str) -> BargainRecord:
    """The record (NotFound). Shows ``expired`` for an open record past its time even before the
    periodic job closed it."""
    record = BargainRecord.objects.filter(bargain_no=bargain_no).first()
    if record is None:
        raise NotFound("没有这个砍价。", bargain_no=bargain_no)
    if record.status == BargainRecord.Status.OPEN and record.expires_at <= timezone.now():
        bargains_expire_due(record_id=record.pk)
        record.refresh_from_db()
    return record


def bargain_list(*, status: str | None = None, now: dt.datetime | None = None):
    """Active 砍价 campaigns of SKUs on sale (``live``, ``upcoming`` or both), at most 100 (:func:`apps.marketing.selectors.activities_listed`)."""
    return selectors.activities_listed(BargainCampaign, status=status, now=now)


# --- orders ask (confirm, create, cancel/refund) ---------------------------------------------


def bargain_check(
    *, bargain_no: str, customer_id: int, quantities: dict[int, int], now: dt.datetime | None = None
) -> BargainRecord:
    """Confirm (phase 1) of a 砍价 order: the caller's open record, exactly one unit of the
    campaign's SKU; the order's price is the record's ``price_fen``. Raises NotFound (no such
    record, or another's), InvalidInput (``items``), InvalidState (bought, expired),
    InsufficientStock (the campaign's stock)."""
    now = now or timezone.now()
    record = (
        BargainRecord.objects.select_related("campaign").filter(bargain_no=bargain_no, customer_id=customer_id).first()
    )
    if record is None:
        raise NotFound("没有这个砍价。", bargain_no=bargain_no)
    if list(quantities) != [record.campaign.sku_id] or quantities[record.campaign.sku_id] != 1:
        raise InvalidInput(items=["砍价订单只能购买该活动商品 1 件"])
    if record.status != BargainRecord.Status.OPEN or record.expires_at <= now:
        raise InvalidState("该砍价已购买或已结束。", bargain_no=bargain_no, status=record.status)
    if record.campaign.stock < 1:
        raise InsufficientStock("砍价商品已抢完。", bargain_id=record.campaign_id, sku_id=record.campaign.sku_id)
    return record


@transaction.atomic(savepoint=False)
def bargain_take(*, bargain_no: str, customer_id: int, order_no: str, now: dt.datetime | None = None) -> int:
    """Create (phase 2), in the order's transaction: ``open -> bought`` on the record (conditional:
    bought at most once; InvalidState) and one unit of the campaign's quota (InsufficientStock).
    Returns the record's id."""
    now = now or timezone.now()
    record = BargainRecord.objects.get(bargain_no=bargain_no)
    if (
        BargainRecord.objects.filter(
            pk=record.pk, customer_id=customer_id, status=BargainRecord.Status.OPEN, expires_at__gt=now
        ).update(status=BargainRecord.Status.BOUGHT, order_no=order_no, bought_at=now)
        != 1
    ):
        raise InvalidState("该砍价已购买或已结束。", bargain_no=bargain_no)
    if (
        BargainCampaign.objects.filter(pk=record.campaign_id, stock__gte=1).update(
            stock=F("stock") - 1, sold=F("sold") + 1
        )
        != 1
    ):
        raise InsufficientStock("砍价商品已抢完。", bargain_id=record.campaign_id)
    return record.pk


@transaction.atomic(savepoint=False)
def bargain_give_back(*, record_id: int, restock: bool, cancelled: bool, now: dt.datetime | None = None) -> None:
    """The order that bought the record stopped being live; once per order under its transition.

    ``cancelled`` (never paid): the record is open again while it has time left (nothing was
    bought), else expired. With ``restock``: the campaign's ``sold -= 1`` and, while it runs,
    ``stock += 1``. Record, then campaign (step 6)."""
    now = now or timezone.now()
    if cancelled:
        BargainRecord.objects.filter(pk=record_id, status=BargainRecord.Status.BOUGHT).update(
            status=Case(
                When(expires_at__gt=now, then=Value(BargainRecord.Status.OPEN)),
                default=Value(BargainRecord.Status.EXPIRED),
            ),
            order_no="",
            bought_at=None,
        )
    if restock:
        campaign_id = BargainRecord.objects.values_list("campaign_id", flat=True).get(pk=record_id)
        BargainCampaign.objects.filter(pk=campaign_id, sold__gte=1).update(
            sold=F("sold") - 1, stock=Case(When(ends_at__gt=now, then=F("stock") + 1), default=F("stock"))
        )


def bargains_expire_due(
    *,
    now: dt.datetime | None = None,
    record_id: int | None = None,
    campaign_id: int | None = None,
    customer_id: int | None = None,
) -> int:
    """Beat: open records past ``expires_at`` become ``expired`` (one conditional UPDATE; safe to
    run twice and on two machines). Returns how many it closed."""
    now = now or timezone.now()
    qs = BargainRecord.objects.filter(status=BargainRecord.Status.OPEN, expires_at__lte=now)
    if record_id is not None:
        qs = qs.filter(pk=record_id)
    if campaign_id is not None:
        qs = qs.filter(campaign_id=campaign_id, customer_id=customer_id)
    return qs.update(status=BargainRecord.Status.EXPIRED)


# --- staff (admin) -----------------------------------------------------------------------------


def bargain_validate(
    *,
    sku: Sku | None,
    original_price_fen: int | None,
    floor_price_fen: int | None,
    helpers_needed: int | None,
    hours: int | None,
    starts_at: dt.datetime | None,
    ends_at: dt.datetime | None,
    stock: int | None,
    limit_per_customer: int | None,
    campaign: BargainCampaign | None = None,
    now: dt.datetime | None = None,
) -> None:
    """The scheduling rules, all at once (InvalidInput, ``detail`` per field). ``campaign``: the
    one being changed (SKU, prices, helpers and stock then do not change)."""
    now = now or timezone.now()
    errors: dict[str, list[str]] = {}
    if campaign is None:
        if sku is None or not sku.is_active or sku.product.kind != Kind.GOODS or not sku.product.is_active:
            errors["sku"] = ["请选择在售的实物商品规格（咨询预约不能砍价）"]
        if helpers_needed is None or not 1 <= helpers_needed <= 100:
            errors["helpers_needed"] = ["所需助力人数须在 1 到 100 之间"]
        if floor_price_fen is None or floor_price_fen < 1:
            errors["floor_price_fen"] = ["底价至少 1 分"]
        elif original_price_fen is None or original_price_fen < floor_price_fen + (helpers_needed or 1):
            errors["original_price_fen"] = ["原价须比底价至少高出「所需人数」分（每刀至少 1 分）"]
        if sku is not None and "sku" not in errors and (stock is None or not 1 <= stock <= sku.stock):
            errors["stock"] = [f"砍价库存须在 1 到该规格当前库存 {sku.stock} 之间"]
    if hours is None or not 1 <= hours <= MAX_HOURS:
        errors["hours"] = [f"砍价时限须在 1 到 {MAX_HOURS} 小时之间"]
    if starts_at is None or ends_at is None:
        errors["starts_at"] = ["请填写开始和结束时间（上海时间）"]
    elif ends_at <= starts_at:
        errors["ends_at"] = ["结束时间必须晚于开始时间"]
    elif ends_at - starts_at > MAX_WINDOW:
        errors["ends_at"] = [f"一次砍价活动最长 {MAX_WINDOW.days} 天"]
    elif campaign is None and ends_at <= now:
        errors["ends_at"] = ["结束时间已过"]
    if limit_per_customer is None or limit_per_customer < 1:
        errors["limit_per_customer"] = ["每人限购至少 1 件"]
    if errors:
        raise InvalidInput(**errors)


@transaction.atomic
def bargain_schedule(
    *,
    title: str,
    sku_id: int,
    original_price_fen: int,
    floor_price_fen: int,
    helpers_needed: int,
    hours: int,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    stock: int,
    limit_per_customer: int = 1,
    is_active: bool = True,
) -> BargainCampaign:
    """Staff schedule a 砍价 campaign (fen, aware Shanghai times); rules in :func:`bargain_validate`."""
    sku = Sku.objects.select_related("product").filter(pk=sku_id).first()
    bargain_validate(
        sku=sku,
        original_price_fen=original_price_fen,
        floor_price_fen=floor_price_fen,
        helpers_needed=helpers_needed,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        stock=stock,
        limit_per_customer=limit_per_customer,
    )
    return BargainCampaign.objects.create(
        title=title,
        sku=sku,
        original_price_fen=original_price_fen,
        floor_price_fen=floor_price_fen,
        helpers_needed=helpers_needed,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        stock=stock,
        limit_per_customer=limit_per_customer,
        is_active=is_active,
    )


@transaction.atomic
def bargain_update(
    *,
    campaign_id: int,
    title: str,
    hours: int,
    starts_at: dt.datetime,
    ends_at: dt.datetime,
    limit_per_customer: int,
    is_active: bool,
) -> BargainCampaign:
    """Staff change a campaign's terms (never its SKU, prices, helpers or stock: records started
    keep theirs)."""
    campaign = BargainCampaign.objects.get(pk=campaign_id)
    bargain_validate(
        sku=None,
        original_price_fen=None,
        floor_price_fen=None,
        helpers_needed=None,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        stock=None,
        limit_per_customer=limit_per_customer,
        campaign=campaign,
    )
    BargainCampaign.objects.filter(pk=campaign_id).update(
        title=title,
        hours=hours,
        starts_at=starts_at,
        ends_at=ends_at,
        limit_per_customer=limit_per_customer,
        is_active=is_active,
    )
    return BargainCampaign.objects.get(pk=campaign_id)
