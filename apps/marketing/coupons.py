"""Coupons: templates staff set up, customers receive (or staff issue), orders price and use.

A ``CouponTemplate`` says what a coupon gives and how many exist. Customers receive one with
:func:`coupon_receive`; staff hand them out with :func:`coupon_issue_start`, to one customer at
once or to a filter in the background (:func:`coupon_issue_run`, re-pushed by beat until done).
The coupon held is ``accounts.Coupon`` (terms copied at receipt): order create takes it with
``accounts.wallet.coupon_take`` (conditional ``available -> used``), cancel and full refund give
it back with ``coupon_return`` while valid; confirm prices it (:func:`coupons_for_cart`, fen).
The limits (``total``, ``per_customer``) hold under races: conditional UPDATEs, one transaction.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Callable
from functools import partial

from django.db import IntegrityError, transaction
from django.db.models import F, Q, QuerySet
from django.utils import timezone

from apps.accounts.models import Coupon, Customer
from apps.catalog.models import Product
from apps.marketing.exceptions import CouponLimitExceeded
from apps.marketing.models import CouponIssue, CouponReceipt, CouponTemplate
from starmall import dispatch
from starmall.errors import InvalidInput, InvalidState, NotFound

logger = logging.getLogger(__name__)

ISSUE_CHUNK = 200  # customers per query while issuing in the background


# --- templates -----------------------------------------------------------------------------


def coupon_template_validate(
    *,
    kind: str,
    amount_fen: int | None,
    percent: int | None,
    max_discount_fen: int | None,
    valid_from: dt.datetime | None,
    valid_to: dt.datetime | None,
    valid_days: int | None,
    total: int | None,
    scope: str,
    categories=(),
    products=(),
    issued: int = 0,
) -> None:
    """Check a template's terms (admin form); raise InvalidInput with per-field problems.

    AMOUNT needs ``amount_fen`` >= 1 fen; PERCENT a ``percent`` of 1..99 (% off). Validity: a
    ``valid_days`` >= 1, or a ``valid_to`` (after ``valid_from``). ``total`` never below what
    was issued. A CATEGORY / PRODUCT scope needs at least one category / product.
    """
    problems: dict[str, list[str]] = {}
    if kind == CouponTemplate.Kind.AMOUNT and not (amount_fen or 0) >= 1:
        problems["amount_fen"] = ["满减券需填写优惠金额（至少 0.01 元）"]
    if kind == CouponTemplate.Kind.PERCENT and not 1 <= (percent or 0) <= 99:
        problems["percent"] = ["折扣券的优惠比例需在 1 到 99 之间（例如 15 表示减 15%）"]
    if valid_days is not None and valid_days < 1:
        problems["valid_days"] = ["领取后有效天数至少为 1 天"]
    elif not valid_days and valid_to is None:
        problems["valid_to"] = ["请填写有效期截止时间，或领取后有效天数"]
    if valid_from and valid_to and valid_to <= valid_from:
        problems["valid_to"] = ["截止时间须晚于开始时间"]
    if total is not None and total < issued:
        problems["total"] = [f"发放总量不能少于已发放的 {issued} 张"]
    if scope == CouponTemplate.Scope.CATEGORY and not categories:
        problems["categories"] = ["请选择适用分类"]
    if scope == CouponTemplate.Scope.PRODUCT and not products:
        problems["products"] = ["请选择适用商品"]
    if problems:
        raise InvalidInput("优惠券设置有误。", **problems)


def coupon_template_save(
    *, template: CouponTemplate, changed: list[str], categories=None, products=None
) -> CouponTemplate:
    """Staff create a template (``template.pk`` None) or change the ``changed`` columns of one
    (admin; ``issued`` is never written here). A lower ``total`` is applied by a conditional
    ``UPDATE ... WHERE issued <= total`` so a coupon received meanwhile cannot be undercut
    (InvalidInput). ``categories`` / ``products``: the scope's M2M, when given."""
    with transaction.atomic():
        if template.pk is None:
            template.issued = 0
            template.save()
        else:
            columns = [c for c in changed if c not in ("issued", "total", "categories", "products")]
            if columns:
                template.save(update_fields=columns)
            if (
                "total" in changed
                and CouponTemplate.objects.filter(pk=template.pk, issued__lte=template.total).update(
                    total=template.total
                )
                != 1
            ):
                raise InvalidInput("发放总量不能少于已发放数量。", total=["发放总量不能少于已发放数量"])
        if categories is not None:
            template.categories.set(categories)
        if products is not None:
            template.products.set(products)
    return template


def templates_receivable(*, customer_id: int | None, now: dt.datetime | None = None) -> list[CouponTemplate]:
    """``GET /coupons/available``: active templates with coupons left, whose receiving window is
    open (``valid_to`` not passed), that the customer has not received ``per_customer`` times."""
    now = now or timezone.now()
    templates = list(
        CouponTemplate.objects.filter(
            Q(valid_to__isnull=True) | Q(valid_to__gt=now),
            is_active=True,
            issued__lt=F("total"),
            occasion=CouponTemplate.Occasion.NONE,  # new-customer and birthday coupons are given, not received
        ).order_by("-id")[:100]
    )
    if customer_id is None:
        return templates
    held = dict(
        CouponReceipt.objects.filter(customer_id=customer_id, template__in=templates).values_list(
            "template_id", "count"
        )
    )
    return [t for t in templates if held.get(t.pk, 0) < t.per_customer]


def _validity(template: CouponTemplate, now: dt.datetime) -> tuple[dt.datetime | None, dt.datetime]:
    """(valid_from, valid_until) of a coupon received at ``now``."""
    if template.valid_days:
        return now, now + dt.timedelta(days=template.valid_days)
    return template.valid_from, template.valid_to


def _coupon_row(template: CouponTemplate, customer_id: int, now: dt.datetime, batch: CouponIssue | None) -> Coupon:
    valid_from, valid_until = _validity(template, now)
    return Coupon.objects.create(
        customer_id=customer_id,
        template=template,
        batch=batch,
        title=template.name,
        kind=template.kind,
        discount_fen=template.amount_fen if template.kind == CouponTemplate.Kind.AMOUNT else 0,
        percent=template.percent if template.kind == CouponTemplate.Kind.PERCENT else 0,
        max_discount_fen=template.max_discount_fen if template.kind == CouponTemplate.Kind.PERCENT else None,
        min_spend_fen=template.threshold_fen,
        valid_from=valid_from,
        valid_until=valid_until,
    )


def _take_one(template_id: int) -> bool:
    """``issued = issued + 1 WHERE issued < total`` (and still active); False: none left."""
    return (
        CouponTemplate.objects.filter(pk=template_id, is_active=True, issued__lt=F("total")).update(
            issued=F("issued") + 1
        )
        == 1
    )


def _count_receipt(template: CouponTemplate, customer_id: int) -> bool:
    """The customer's receipt counter +1 unless at ``per_customer``; False: limit reached."""
    bump = CouponReceipt.objects.filter(template=template, customer_id=customer_id, count__lt=template.per_customer)
    if bump.update(count=F("count") + 1) == 1:
        return True
    try:
        with transaction.atomic():  # savepoint: the first receipt; a racing one raises here
            CouponReceipt.objects.create(template=template, customer_id=customer_id, count=1)
        return True
    except IntegrityError:
        return bump.update(count=F("count") + 1) == 1


def coupon_receive(*, template_id: int, customer_id: int, now: dt.datetime | None = None) -> Coupon:
    """A customer receives a coupon of the template (``POST /coupons/receive``); returns it.

    One transaction: the customer's receipt counter (per-customer limit), then the template's
    ``issued`` counter (total), then the coupon row. Raises NotFound (no such template, or
    not active, or a new-customer / birthday template: those are given), InvalidState (its receiving window has ended), CouponLimitExceeded (409
    ``limit_exceeded``: the customer's limit reached, or none left).
    """
    now = now or timezone.now()
    template = CouponTemplate.objects.filter(
        pk=template_id, is_active=True, occasion=CouponTemplate.Occasion.NONE
    ).first()
    if template is None:
        raise NotFound("没有这个优惠券活动。", template_id=template_id)
    if template.valid_to is not None and template.valid_to <= now:
        raise InvalidState("该优惠券已过领取时间。", template_id=template_id)
    with transaction.atomic():
        # The customer's row first, the template's (hot: every customer) last, so its lock is
        # held briefly.
        if not _count_receipt(template, customer_id):
            raise CouponLimitExceeded(
                f"每人最多领取 {template.per_customer} 张。",
                template_id=template_id,
                per_customer=template.per_customer,
            )
        if not _take_one(template.pk):
            raise CouponLimitExceeded("优惠券已领完。", template_id=template_id, remaining=0)
        return _coupon_row(template, customer_id, now, None)


def coupon_grant(
    *, template: CouponTemplate, customer_id: int, now: dt.datetime | None = None, batch: CouponIssue | None = None
) -> Coupon | None:
    """The shop gives the customer one coupon of ``template`` (a gift, a points-mall exchange,
    a staff issue: ``batch``), in the caller's transaction: ``issued`` + 1 (conditional, the
    template still active) and the coupon row; None when none is left (nothing written). Counted
    against ``total``, not ``per_customer``; the caller's own UNIQUE key makes it once per
    customer (a ``batch``'s: the coupon's UNIQUE (batch, customer))."""
    if not _take_one(template.pk):
        return None
    return _coupon_row(template, customer_id, now or timezone.now(), batch)


# --- staff issue ---------------------------------------------------------------------------


def coupon_issue_start(
    *,
    template_id: int,
    customer_id: int | None = None,
    joined_after: dt.datetime | None = None,
    joined_before: dt.datetime | None = None,
    min_points: int | None = None,
    created_by: str = "",
) -> CouponIssue:
    """Staff (admin, permission ``marketing.issue_coupon``) hand out the template: to
    ``customer_id`` (done before returning), or to every active customer matching the filter
    (``joined_after`` <= created_at < ``joined_before``, points >= ``min_points``; all three
    optional), in the background. Each customer gets one coupon per issue (UNIQUE batch +
    customer), counted against the template's total, not the per-customer receive limit.
    Raises NotFound (template missing or not active).
    """
    if not CouponTemplate.objects.filter(pk=template_id, is_active=True).exists():
        raise NotFound("没有这个优惠券活动，或已停用。", template_id=template_id)
    with transaction.atomic():
        issue = CouponIssue.objects.create(
            template_id=template_id,
            customer_id=customer_id,
            joined_after=joined_after,
            joined_before=joined_before,
            min_points=min_points,
            created_by=created_by,
        )
        if customer_id is None:
            transaction.on_commit(partial(_push_issue, issue.pk))
    if customer_id is not None:
        coupon_issue_run(issue_id=issue.pk)
        issue.refresh_from_db()
    return issue


def _push_issue(issue_id: int, *, sweep: bool = False) -> None:
    from apps.marketing.tasks import coupon_issue_run as task  # tasks import this module

    dispatch.push(task, issue_id, sweep=sweep)


def _audience(issue: CouponIssue) -> QuerySet[Customer]:
    if issue.customer_id is not None:
        return Customer.objects.filter(pk=issue.customer_id)
    qs = Customer.objects.filter(is_active=True)
    if issue.joined_after:
        qs = qs.filter(created_at__gte=issue.joined_after)
    if issue.joined_before:
        qs = qs.filter(created_at__lt=issue.joined_before)
    if issue.min_points is not None:
        qs = qs.filter(points__gte=issue.min_points)
    return qs


def coupon_issue_run(*, issue_id: int, now: dt.datetime | None = None) -> str:
    """Grant the issue's coupons (:func:`coupon_issue_walk` over its audience); returns the
    status. The once-key is the coupon's UNIQUE (batch, customer). Safe to run twice, or twice
    at once."""
    now = now or timezone.now()
    issue = CouponIssue.objects.select_related("template").filter(pk=issue_id).first()
    if issue is None:
        return "done"
    return coupon_issue_walk(
        issue,
        audience=_audience(issue).values_list("pk", flat=True),
        key="pk",
        grant=lambda customer_id: coupon_grant(template=issue.template, customer_id=customer_id, now=now, batch=issue),
        now=now,
    )


def coupon_issue_walk(issue, *, audience: QuerySet, key: str, grant: Callable[[int], Coupon | None], now) -> str:
    """The one walk of a staff issue of a template to a set of customers: marketing's
    ``CouponIssue`` and crm's ``TagCouponIssue`` (rows with ``status``, ``cursor``, ``granted``,
    ``skipped``, ``finished_at``). ``audience``: the customers' ids, in the field ``key``; walked
    in id order from the row's ``cursor``, each customer in its own transaction: ``grant(id)``
    gives the coupon (:func:`coupon_grant`: the template's ``issued`` + 1 and the coupon) with
    the caller's UNIQUE once-key (an IntegrityError: given before by an earlier, retried or
    parallel run; everything of that customer rolls back), then the row's ``granted`` and
    ``cursor``. None from ``grant`` (the template ran out): the customers left are counted
    ``skipped`` and the issue is DONE. Returns "done"."""
    model = type(issue)
    if issue.status == model.Status.DONE:
        return "done"
    model.objects.filter(pk=issue.pk, status=model.Status.PENDING).update(status=model.Status.RUNNING)
    ordered = audience.order_by(key)
    cursor = issue.cursor
    while ids := list(ordered.filter(**{f"{key}__gt": cursor})[:ISSUE_CHUNK]):
        for customer_id in ids:
            cursor = customer_id
            try:
                with transaction.atomic():
                    if grant(customer_id) is None:  # nothing written: none left
                        left = ordered.filter(**{f"{key}__gte": customer_id}).count()
                        model.objects.filter(pk=issue.pk).update(skipped=left, cursor=customer_id)
                        logger.warning("coupon issue %s: template ran out, %s customers skipped", issue, left)
                        return _finish(issue, now)
                    model.objects.filter(pk=issue.pk).update(cursor=customer_id, granted=F("granted") + 1)
            except IntegrityError:
                continue  # this customer already has the issue's coupon
        model.objects.filter(pk=issue.pk, cursor__lt=cursor).update(cursor=cursor)
    return _finish(issue, now)


def _finish(issue, now: dt.datetime) -> str:
    model = type(issue)
    model.objects.filter(pk=issue.pk).exclude(status=model.Status.DONE).update(
        status=model.Status.DONE, finished_at=now
    )
    return "done"


def coupon_issues_redispatch(model=CouponIssue, push: Callable[..., None] | None = None) -> int:
    """Beat: push again every issue of ``model`` not DONE with ``push(pk, sweep=True)`` (the row
    is the source of truth, not Redis); marketing's issues by default."""
    push = push or _push_issue
    pending = list(model.objects.exclude(status=model.Status.DONE).values_list("pk", flat=True)[:100])
    for pk in pending:
        push(pk, sweep=True)
    return len(pending)


# --- pricing (orders ask at confirm) ---------------------------------------------------------


def _scope_sets(templates: list[CouponTemplate]) -> dict[int, tuple[str, set[int]]]:
    """template id -> (scope, ids of categories or products in it)."""
    out: dict[int, tuple[str, set[int]]] = {}
    for t in templates:
        if t.scope == CouponTemplate.Scope.CATEGORY:
            out[t.pk] = (t.scope, set(t.categories.values_list("pk", flat=True)))
        elif t.scope == CouponTemplate.Scope.PRODUCT:
            out[t.pk] = (t.scope, set(t.products.values_list("pk", flat=True)))
        else:
            out[t.pk] = (t.scope, set())
    return out


def coupon_discount(
    coupon: Coupon, lines: list[dict], scope: tuple[str, set[int]] | None, categories: dict[int, set[int]]
) -> int:
    """Fen ``coupon`` takes off ``lines`` (``[{"product_id", "amount_fen"}]``), before the
    order's caps (``order_confirm``: at most the goods total, at least 1 fen left to pay).
    ``scope``: (scope, ids) of its template, None for everything (ALL, no template); CATEGORY
    counts a line whose product's category or its parent is listed, PRODUCT a listed product.
    ``categories``: product id -> {its category, that category's parent}. 0 below
    ``min_spend_fen`` (the template's ``threshold_fen``) of in-scope goods; AMOUNT:
    ``min(amount, in_scope)``; PERCENT: ``floor(in_scope * percent / 100)``, at most
    ``max_discount_fen``."""
    kind, ids = scope or (CouponTemplate.Scope.ALL, set())
    in_scope = 0
    for line in lines:
        if kind == CouponTemplate.Scope.PRODUCT:
            hit = line["product_id"] in ids
        elif kind == CouponTemplate.Scope.CATEGORY:
            hit = bool(categories.get(line["product_id"], set()) & ids)
        else:
            hit = True
        in_scope += line["amount_fen"] if hit else 0
    if in_scope <= 0 or in_scope < coupon.min_spend_fen:
        return 0
    if coupon.kind == Coupon.Kind.PERCENT:
        off = in_scope * coupon.percent // 100
        if coupon.max_discount_fen is not None:
            off = min(off, coupon.max_discount_fen)
        return off
    return min(coupon.discount_fen, in_scope)


def coupons_for_cart(*, lines: list[dict], coupons: list[Coupon]) -> list[dict]:
    """Of the customer's usable ``coupons`` (with templates, earliest to expire first: confirm's
    reads), those that take something off ``lines``, with what each takes off, best first:
    ``[{"id", "name", "discount_fen"}]`` (fen, before the order's caps; ties: the one that
    expires first)."""
    if not coupons:
        return []
    scopes = _scope_sets(list({c.template_id: c.template for c in coupons if c.template_id}.values()))
    categories: dict[int, set[int]] = {}
    if any(kind == CouponTemplate.Scope.CATEGORY for kind, _ in scopes.values()):
        for pk, category_id, parent_id in Product.objects.filter(
            pk__in={line["product_id"] for line in lines}
        ).values_list("pk", "category_id", "category__parent_id"):
            categories[pk] = {category_id} | ({parent_id} if parent_id else set())
    found = []
    for coupon in coupons:
        off = coupon_discount(coupon, lines, scopes.get(coupon.template_id), categories)
        if off > 0:
            found.append({"id": coupon.pk, "name": coupon.title, "discount_fen": off})
    found.sort(key=lambda c: -c["discount_fen"])  # stable: ties keep the earliest expiry first
    return found
