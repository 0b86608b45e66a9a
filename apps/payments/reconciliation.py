"""Daily reconciliation: WeChat Pay's bill of a day against our payments and refunds.

Each Pay API's payments (recharges and member card purchases too) against its own bill, through
``apps/payments/gateway.py``: v2 ``pay/downloadbill`` (bill_type ALL), v3 ``GET /v3/bill/tradebill``
(hash checked; the same CSV, parsed by ``apps/payments/wechat_bill.py``; WECHAT.md). Integer fen
throughout, and Beijing (Asia/Shanghai) days whatever ``TIME_ZONE`` says: WeChat cuts its days in
Beijing time (a payment is on the bill of the day it was paid, a refund of the day it was applied
for). Each problem is one item of ``ReconciliationRun.differences`` (the kinds: :func:`compare`);
a day without differences balances to the fen.
"""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field, replace
from functools import partial
from zoneinfo import ZoneInfo

from django.db import transaction
from django.db.models import Case, F, Q, Value, When
from django.utils import timezone

from apps.alerts.models import Alert
from apps.alerts.services import alert_raise
from apps.members.models import CardPurchase
from apps.orders.models import PayMethod
from apps.payments import gateway, staff_limits
from apps.payments.models import Payment, PaymentStatus, Recharge, ReconciliationRun, Refund
from apps.payments.wechat_bill import Bill, BillFormatError, BillRefund, BillTrade, parse_bill
from apps.payments.wechat_bill import yuan_to_fen as yuan_to_fen  # re-exported: the parser's API stays here too
from starmall import dispatch
from starmall.admin_money import yuan
from starmall.errors import InvalidInput

logger = logging.getLogger(__name__)

PERMISSION = "payments.run_reconciliation"
BEIJING = ZoneInfo("Asia/Shanghai")  # WeChat's bill days are Beijing days
ERROR_RETRY_DAYS = 7  # reconcile_previous_day retries days that failed to download this far back
_CHUNK = 500  # keys per IN (...) query (SQLite caps bound parameters)

MISSING_LOCAL, MISSING_WECHAT, AMOUNT, STATUS = "missing_local", "missing_wechat", "amount", "status"
KIND_LABELS = {  # what staff read for each kind of difference (admin, alerts)
    MISSING_LOCAL: "微信有、本地无",
    MISSING_WECHAT: "本地有、微信无",
    AMOUNT: "金额不符",
    STATUS: "状态不符",
}

# WeChat refund states that mean money leaves (or is leaving) the merchant account.
_WECHAT_REFUND_LIVE = frozenset({"SUCCESS", "PROCESSING"})
# Our refund states that mean we asked WeChat and were not told it failed.
_LOCAL_REFUND_LIVE = frozenset({Refund.Status.SUBMITTED, Refund.Status.SUCCESS})
# WeChat refund state -> our states that agree with it (anything else: a ``status`` difference).
# PROCESSING agrees with our success too: the bill is a snapshot, and our success came from WeChat.
_REFUND_AGREES = {
    "SUCCESS": {Refund.Status.SUCCESS},
    "PROCESSING": {Refund.Status.SUBMITTED, Refund.Status.SUCCESS},
    "REFUNDCLOSE": {Refund.Status.FAILED},
    "CHANGE": {Refund.Status.FAILED},  # refund to a closed card: WeChat needs a manual step
}


# --- comparison ------------------------------------------------------------------------------


@dataclass
class Comparison:
    """What :func:`compare` found; fen totals are paid minus refunded."""

    differences: list[dict] = field(default_factory=list)
    wechat_count: int = 0
    local_count: int = 0
    wechat_fen: int = 0
    local_fen: int = 0

    def add(
        self,
        kind: str,
        *,
        out_trade_no: str,
        out_refund_no: str = "",
        wechat_fen: int | None,
        local_fen: int | None,
        wechat_status: str,
        local_status: str,
    ) -> None:
        self.differences.append(
            {
                "kind": kind,
                "out_trade_no": out_trade_no,
                "out_refund_no": out_refund_no,
                "wechat_fen": wechat_fen,
                "local_fen": local_fen,
                "wechat_status": wechat_status,
                "local_status": local_status,
            }
        )


def _by_key(items: Iterable, key: str) -> dict:
    """Index bill lines by ``key``; a key listed twice (WeChat does not) keeps both amounts."""
    out: dict = {}
    for item in items:
        k = getattr(item, key)
        if k in out:
            amount = "total_fen" if isinstance(item, BillTrade) else "refund_fen"
            item = replace(item, **{amount: getattr(out[k], amount) + getattr(item, amount)})
        out[k] = item
    return out


def compare(
    bill: Bill, payments: dict[str, dict], refunds: dict[str, dict], others: dict[str, str] | None = None
) -> Comparison:
    """Compare a parsed bill with our rows: one difference per problem and key (``out_trade_no``,
    ``out_refund_no``): ``missing_local`` (on the bill, not ours), ``missing_wechat`` (ours, not on
    the bill), ``amount`` (the fen differ), ``status`` (the states disagree). Cases: the comments
    of :func:`_compare_trades` and :func:`_compare_refunds`.

    ``payments``: ``{out_trade_no: {"total_fee", "status"}}`` of our PAID WeChat payments in
    scope; ``refunds``: ``{out_refund_no: {"out_trade_no", "refund_fen", "status"}}``;
    ``others``: ``{out_trade_no: status}`` of our not-paid payments the bill names (context
    for ``missing_local``). Amounts in fen.
    """
    # Both sides' fen are paid - refunded, counted alike (paid: SUCCESS / ``paid``; refunded: WeChat
    # SUCCESS / PROCESSING, ours submitted / success), so every key without a difference adds the
    # same fen to both: wechat_fen - local_fen is exactly what the differences account for.
    # wechat_count: the bill's lines; local_count: our rows compared (paid payments + refunds).
    result = Comparison(wechat_count=bill.row_count, local_count=len(payments) + len(refunds))
    _compare_trades(result, _by_key(bill.trades, "out_trade_no"), payments, others or {})
    _compare_refunds(result, _by_key(bill.refunds, "out_refund_no"), refunds)
    return result


def _compare_trades(
    result: Comparison, trades: dict[str, BillTrade], payments: dict[str, dict], others: dict[str, str]
) -> None:
    """Add the payments' totals and differences to ``result``, in ``out_trade_no`` order."""
    for no in sorted(trades.keys() | payments.keys()):
        line, ours = trades.get(no), payments.get(no)
        result.wechat_fen += line.total_fen if line and line.trade_state == "SUCCESS" else 0
        result.local_fen += ours["total_fee"] if ours else 0
        if line is None:  # we hold it as paid that day; the bill does not list it
            result.add(
                MISSING_WECHAT,
                out_trade_no=no,
                wechat_fen=None,
                local_fen=ours["total_fee"],
                wechat_status="",
                local_status=ours["status"],
            )
        elif ours is None:
            # Paid at WeChat, not ``paid`` here (no row, or pending / unknown / closed: its
            # notification never reached us): money we do not know of.
            if line.trade_state == "SUCCESS":
                result.add(
                    MISSING_LOCAL,
                    out_trade_no=no,
                    wechat_fen=line.total_fen,
                    local_fen=None,
                    wechat_status=line.trade_state,
                    local_status=others.get(no, ""),
                )
        else:
            both = {
                "out_trade_no": no,
                "wechat_fen": line.total_fen,
                "local_fen": ours["total_fee"],
                "wechat_status": line.trade_state,
                "local_status": ours["status"],
            }
            if line.trade_state != "SUCCESS":  # e.g. REVOKED, and we say paid
                result.add(STATUS, **both)
            if line.total_fen != ours["total_fee"]:
                result.add(AMOUNT, **both)


def _compare_refunds(result: Comparison, bill_refunds: dict[str, BillRefund], refunds: dict[str, dict]) -> None:
    """Add the refunds' totals (subtracted) and differences to ``result``, in ``out_refund_no``
    order."""
    for no in sorted(bill_refunds.keys() | refunds.keys()):
        line, ours = bill_refunds.get(no), refunds.get(no)
        result.wechat_fen -= line.refund_fen if line and line.refund_status in _WECHAT_REFUND_LIVE else 0
        result.local_fen -= ours["refund_fen"] if ours and ours["status"] in _LOCAL_REFUND_LIVE else 0
        trade_no = line.out_trade_no if line else ours["out_trade_no"]
        common = {
            "out_trade_no": trade_no,
            "out_refund_no": no,
            "wechat_status": line.refund_status if line else "",
            "local_status": ours["status"] if ours else "",
        }
        if line is None:  # we submitted or refunded it that day; the bill does not list it
            result.add(MISSING_WECHAT, wechat_fen=None, local_fen=ours["refund_fen"], **common)
        elif ours is None:  # a refund we have no row for
            result.add(MISSING_LOCAL, wechat_fen=line.refund_fen, local_fen=None, **common)
        else:
            if line.refund_fen != ours["refund_fen"]:
                result.add(AMOUNT, wechat_fen=line.refund_fen, local_fen=ours["refund_fen"], **common)
            if ours["status"] not in _REFUND_AGREES.get(line.refund_status, ()):
                result.add(STATUS, wechat_fen=line.refund_fen, local_fen=ours["refund_fen"], **common)


def _chunks(keys: Iterable[str]) -> Iterator[list[str]]:
    keys = sorted(keys)
    for i in range(0, len(keys), _CHUNK):
        yield keys[i : i + _CHUNK]


def beijing_day(bill_date: dt.date) -> tuple[dt.datetime, dt.datetime]:
    """``[start, end)`` of a Beijing date as aware datetimes."""
    start = dt.datetime.combine(bill_date, dt.time.min, tzinfo=BEIJING)
    return start, dt.datetime.combine(bill_date + dt.timedelta(days=1), dt.time.min, tzinfo=BEIJING)


def local_rows(bill_date: dt.date, bill: Bill, api: str | None = None) -> tuple[dict, dict, dict]:
    """Our side of ``bill_date`` (Beijing) for :func:`compare`: (payments, refunds, others).

    Payments: WeChat payments ``paid`` with ``paid_at`` (WeChat's time_end) that day, plus our
    paid ones the bill names. Refunds: of WeChat payments, ``submitted``/``success`` and created
    that day, plus any the bill names. Others: our not-paid payments the bill names. ``api``:
    only the day's payments (recharges, refunds of payments) made under that Pay API.
    """
    start, end = beijing_day(bill_date)
    fields = ("out_trade_no", "total_fee", "status")
    of_api = {"api": api} if api else {}
    payments = {
        p["out_trade_no"]: p
        for p in Payment.objects.filter(
            method=PayMethod.WECHAT,
            status=PaymentStatus.PAID,
            paid_at__gte=start,
            paid_at__lt=end,
            **of_api,
        ).values(*fields)
    }
    others: dict[str, str] = {}
    for keys in _chunks({t.out_trade_no for t in bill.trades} - payments.keys()):
        for p in Payment.objects.filter(out_trade_no__in=keys).values(*fields):
            if p["status"] == PaymentStatus.PAID:
                payments[p["out_trade_no"]] = p
            else:
                others[p["out_trade_no"]] = p["status"]

    # Refunds created that day: the worker applies at WeChat at once and retries within 20 minutes.
    refund_fields = ("out_refund_no", "refund_fen", "status", "payment__out_trade_no", "card_purchase__purchase_no")
    found = list(
        Refund.objects.filter(
            _wechat_refunds(api), status__in=_LOCAL_REFUND_LIVE, created_at__gte=start, created_at__lt=end
        ).values(*refund_fields)
    )
    for keys in _chunks({r.out_refund_no for r in bill.refunds} - {r["out_refund_no"] for r in found}):
        found += Refund.objects.filter(out_refund_no__in=keys).values(*refund_fields)
    refunds = {
        r["out_refund_no"]: {
            "out_trade_no": r["payment__out_trade_no"] or r["card_purchase__purchase_no"] or "",
            "refund_fen": r["refund_fen"],
            "status": r["status"],
        }
        for r in found
    }
    payments = {k: {"total_fee": v["total_fee"], "status": v["status"]} for k, v in payments.items()}
    _recharge_rows(start, end, bill, payments, others, of_api)
    return payments, refunds, others


def _recharge_rows(
    start: dt.datetime, end: dt.datetime, bill: Bill, payments: dict, others: dict, of_api: dict
) -> None:
    """Recharges and member-card purchases are WeChat trades too (``out_trade_no`` = their
    number, ``R...`` / ``M...``): the paid ones of the day, plus our paid ones the bill names,
    join ``payments`` (``total_fee`` = pay_fen); unpaid / expired ones the bill names go to
    ``others``. A bill trade with no such row (or not paid here) is then a ``missing_local``
    difference, an amount that differs ``amount``. A refunded card was paid: it counts as paid."""
    for model, number, prefix, paid in _PREFIXED_TRADES:
        fields = (number, "pay_fen", "status")
        found = list(
            model.objects.filter(status__in=paid, paid_at__gte=start, paid_at__lt=end, **of_api).values(*fields)
        )
        named = {t.out_trade_no for t in bill.trades if t.out_trade_no.startswith(prefix)} - {r[number] for r in found}
        for keys in _chunks(named):
            found += model.objects.filter(**{f"{number}__in": keys}).values(*fields)
        for r in found:
            if r["status"] in paid:
                payments[r[number]] = {"total_fee": r["pay_fen"], "status": r["status"]}
            else:
                others[r[number]] = r["status"]


#: (model, its out_trade_no field, the number's prefix, the statuses of a paid trade)
_PREFIXED_TRADES = (
    (Recharge, "recharge_no", "R", (Recharge.Status.PAID,)),
    (CardPurchase, "purchase_no", "M", (CardPurchase.Status.PAID, CardPurchase.Status.REFUNDED)),
)


# --- the run -----------------------------------------------------------------------------------


def reconcile(*, bill_date: dt.date) -> ReconciliationRun:
    """Download WeChat's bill of ``bill_date`` (a Beijing date), compare it with our rows, and
    store the one ReconciliationRun of that day (a rerun replaces it).

    Status ``ok`` (no difference: ``wechat_fen == local_fen``), ``differences``, or ``error``
    (WeChat unreachable / refused, or the bill does not add up: message in ``error``). Never
    raises for WeChat's failures. Alerts (one ``ALERT reconciliation`` error log line) when the
    day turns ``differences`` or ``error``, once per status: a rerun with the same status does
    not alert again (:func:`_store`). Calls WeChat outside any transaction; each api of the day
    (:func:`apis_of_day`) against its own bill, the two comparisons added up.
    """
    found = Comparison()
    for api in apis_of_day(bill_date):
        try:
            bill = parse_bill(gateway.gateway_for(api).download_bill(bill_date=bill_date))
        except (gateway.PayUnavailable, gateway.PayRejected, BillFormatError) as exc:
            error = f"{type(exc).__name__}: {exc}" + ("" if api == gateway.API_V2 else f" (Pay API {api} bill)")
            return _store(bill_date, status=ReconciliationRun.Status.ERROR, error=error[:2000])
        bill = _bill_of_api(bill, api)
        one = compare(bill, *local_rows(bill_date, bill, api))
        found.differences += [d if api == gateway.API_V2 else {**d, "api": api} for d in one.differences]
        found.wechat_count += one.wechat_count
        found.local_count += one.local_count
        found.wechat_fen += one.wechat_fen
        found.local_fen += one.local_fen
    return _store(
        bill_date,
        status=ReconciliationRun.Status.DIFFERENCES if found.differences else ReconciliationRun.Status.OK,
        wechat_count=found.wechat_count,
        local_count=found.local_count,
        wechat_fen=found.wechat_fen,
        local_fen=found.local_fen,
        differences=found.differences,
    )


def _wechat_refunds(api: str | None) -> Q:
    """Refunds through WeChat: of a WeChat payment or of a member card purchase; of ``api`` only
    when given."""
    if api:
        return Q(payment__method=PayMethod.WECHAT, payment__api=api) | Q(card_purchase__api=api)
    return Q(payment__method=PayMethod.WECHAT) | Q(card_purchase__isnull=False)


def apis_of_day(bill_date: dt.date) -> list[str]:
    """The Pay APIs whose bill of ``bill_date`` is read: ``WECHAT_PAY_API``, and the api of every
    WeChat payment or recharge paid that (Beijing) day and of every refund of one made that day."""
    start, end = beijing_day(bill_date)
    day = {"paid_at__gte": start, "paid_at__lt": end}
    apis = {gateway.api_new()}
    apis |= set(Payment.objects.filter(method=PayMethod.WECHAT, **day).values_list("api", flat=True).distinct())
    apis |= set(Recharge.objects.filter(**day).values_list("api", flat=True).distinct())
    apis |= set(CardPurchase.objects.filter(**day).values_list("api", flat=True).distinct())
    made = Refund.objects.filter(_wechat_refunds(None), created_at__gte=start, created_at__lt=end)
    apis |= set(made.filter(payment__isnull=False).values_list("payment__api", flat=True).distinct())
    apis |= set(made.filter(card_purchase__isnull=False).values_list("card_purchase__api", flat=True).distinct())
    return sorted(apis)


def _bill_of_api(bill: Bill, api: str) -> Bill:
    """``bill`` without the lines of payments (and recharges, and their refunds) we made under
    another api: those are compared on that api's bill. Lines of numbers we do not know stay."""
    # Real WeChat's bill is the merchant's whole day, whichever api fetches it.
    named = {t.out_trade_no for t in bill.trades} | {r.out_trade_no for r in bill.refunds}
    other: set[str] = set()
    for keys in _chunks(named):
        other |= set(
            Payment.objects.filter(out_trade_no__in=keys).exclude(api=api).values_list("out_trade_no", flat=True)
        )
        other |= set(
            Recharge.objects.filter(recharge_no__in=keys).exclude(api=api).values_list("recharge_no", flat=True)
        )
        other |= set(
            CardPurchase.objects.filter(purchase_no__in=keys).exclude(api=api).values_list("purchase_no", flat=True)
        )
    if not other:
        return bill
    return replace(
        bill,
        trades=tuple(t for t in bill.trades if t.out_trade_no not in other),
        refunds=tuple(r for r in bill.refunds if r.out_trade_no not in other),
    )


def _store(bill_date: dt.date, *, status: str, **values) -> ReconciliationRun:
    """update_or_create the day's row, then alert once if it is not ok.

    On update, ``alerted`` is computed by the UPDATE itself from the row's previous status
    (kept when the status is unchanged, else False), so two runs of the same day at once
    cannot both see "not alerted yet" for the same status.
    """
    values = {
        "running_since": None,  # a run the back office started is over
        "wechat_count": 0,
        "local_count": 0,
        "wechat_fen": 0,
        "local_fen": 0,
        "differences": [],
        "error": "",
        **values,
        "status": status,
    }
    run, _ = ReconciliationRun.objects.update_or_create(
        bill_date=bill_date,
        create_defaults={**values, "alerted": False},
        defaults={**values, "alerted": Case(When(status=status, then=F("alerted")), default=Value(False))},
    )
    with transaction.atomic():  # alerted and the alert row together
        alerted = (
            status != ReconciliationRun.Status.OK
            and ReconciliationRun.objects.filter(pk=run.pk, status=status, alerted=False).update(alerted=True) == 1
        )
        if alerted:
            _alert(bill_date, status, values)
    if alerted:
        logger.error("ALERT reconciliation %s %s", bill_date.isoformat(), _summary(status, values))
    run.refresh_from_db()
    if status == ReconciliationRun.Status.OK:
        logger.info("reconciliation %s ok: %s lines, %s fen", bill_date, run.wechat_count, run.wechat_fen)
    return run


def _alert(bill_date: dt.date, status: str, values: dict) -> None:
    """The one alert of a day that turned ``differences`` or ``error`` (key
    ``reconciliation:<date>:<status>``: a day that fails to download, then shows differences,
    is two problems; the same status found again is the same one)."""
    day = bill_date.isoformat()
    if status == ReconciliationRun.Status.ERROR:
        title = f"{day} 对账失败：未能取得微信账单"
        text = f"{day} 的对账未能完成：{values['error']}。请在后台「对账」中查看，稍后「重新对账这一天」。"
    else:
        kinds: dict[str, int] = {}
        for item in values["differences"]:
            kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
        by_kind = "，".join(f"{KIND_LABELS.get(k, k)} {n} 笔" for k, n in sorted(kinds.items()))
        numbers = "、".join(d.get("out_refund_no") or d.get("out_trade_no") or "?" for d in values["differences"][:10])
        more = " 等" if len(values["differences"]) > 10 else ""
        title = f"{day} 对账有 {len(values['differences'])} 笔差异"
        text = (
            f"{day} 的微信账单与本地记录不符：{by_kind}（{numbers}{more}）。微信 {values['wechat_count']} 笔 "
            f"{yuan(values['wechat_fen'])} 元，本地 {values['local_count']} 笔 {yuan(values['local_fen'])} 元。"
            f"请在后台「对账」中查看差异明细。"
        )
    alert_raise(key=f"reconciliation:{day}:{status}", kind=Alert.Kind.RECONCILIATION, title=title, text=text)


def _summary(status: str, values: dict) -> str:
    if status == ReconciliationRun.Status.ERROR:
        return f"error: {values['error']}"
    kinds: dict[str, int] = {}
    for item in values["differences"]:
        kinds[item["kind"]] = kinds.get(item["kind"], 0) + 1
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(kinds.items()))
    return (
        f"differences: {len(values['differences'])} ({by_kind}); WeChat {values['wechat_count']} lines "
        f"{values['wechat_fen']} fen, local {values['local_count']} rows {values['local_fen']} fen"
    )


def beijing_today() -> dt.date:
    """Today's date in Beijing."""
    return timezone.now().astimezone(BEIJING).date()


def previous_day(today: dt.date | None = None) -> dt.date:
    """Yesterday as a Beijing date (``today`` defaults to :func:`beijing_today`)."""
    return (today or beijing_today()) - dt.timedelta(days=1)


def reconcile_previous_day(*, today: dt.date | None = None) -> ReconciliationRun:
    """Beat (daily 10:30 Beijing): reconcile yesterday, then retry the days of the last
    ``ERROR_RETRY_DAYS`` whose bill could not be fetched. Returns yesterday's run."""
    yesterday = previous_day(today)
    run = reconcile(bill_date=yesterday)
    failed = (
        ReconciliationRun.objects.filter(
            status=ReconciliationRun.Status.ERROR,
            bill_date__lt=yesterday,
            bill_date__gte=yesterday - dt.timedelta(days=ERROR_RETRY_DAYS),
        )
        .order_by("bill_date")
        .values_list("bill_date", flat=True)
    )
    for bill_date in list(failed):
        reconcile(bill_date=bill_date)
    return run


def reconcile_start(*, bill_date: dt.date, user) -> ReconciliationRun:
    """Staff start the reconciliation of ``bill_date`` (a Beijing day before today) from the back
    office: the day's row gets ``running_since`` (a day without a result yet: status ``running``),
    and after commit the worker runs :func:`reconcile` (task ``reconcile_day``), which stores the
    result and clears ``running_since``. Starting again while it runs is harmless (a rerun
    replaces the row). Raises StaffForbidden (no ``payments.run_reconciliation``), InvalidInput."""
    if user is None or not user.is_active or not user.has_perm(PERMISSION):
        raise staff_limits.StaffForbidden(f"没有对账的权限，需{staff_limits.roles_text(PERMISSION)}操作。")
    if bill_date >= beijing_today():
        raise InvalidInput("只能对账今天以前的日期（微信账单次日 10 点后生成）。", date=["须早于今天"])
    now, by = timezone.now(), user.get_username()
    with transaction.atomic():
        run, _ = ReconciliationRun.objects.update_or_create(
            bill_date=bill_date,
            create_defaults={"status": ReconciliationRun.Status.RUNNING, "running_since": now, "started_by": by},
            defaults={"running_since": now, "started_by": by},
        )
        transaction.on_commit(partial(_dispatch_day, bill_date))
    return run


def _dispatch_day(bill_date: dt.date) -> None:
    from apps.payments.tasks import reconcile_day

    # if Redis is down the row stays "running": staff start it again, or the daily run replaces it
    dispatch.push(reconcile_day, bill_date.isoformat())
