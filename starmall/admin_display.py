"""Readable text for what the admin shows: JSON snapshots (addresses, specs), who did something
(an order event's actor), Shanghai times."""

from __future__ import annotations

from django.utils import timezone

from starmall.admin_money import yuan


def address_text(snapshot: dict | None) -> str:
    """An order's address snapshot -> "张三 13800000000 浙江省杭州市西湖区文三路100号" ("-" if none)."""
    if not snapshot:
        return "-"
    place = "".join(str(snapshot.get(k) or "") for k in ("province", "city", "district", "detail"))
    return " ".join(part for part in (snapshot.get("name"), snapshot.get("phone"), place) if part) or "-"


def specs_text(specs: dict | None) -> str:
    """``{"颜色": "天青", "容量": "120ml"}`` -> "颜色：天青；容量：120ml" ("-" if none)."""
    if not specs:
        return "-"
    return "；".join(f"{k}：{v}" for k, v in specs.items())


def coupon_terms_text(
    *, kind: str, amount_fen: int, percent: int, max_discount_fen: int | None, threshold_fen: int
) -> str:
    """A coupon's (or template's) terms in one line, amounts in yuan: "满 150.00 减 30.00",
    "无门槛减 10.00", "满 100.00 打 8.5折，最多减 20.00" (15% off is 8.5折, as staff and
    customers say it: :func:`zhe_text`). ``kind`` "amount" or "percent"."""
    where = f"满 {yuan(threshold_fen)} " if threshold_fen else "无门槛"
    if kind == "percent":
        cap = f"，最多减 {yuan(max_discount_fen)}" if max_discount_fen is not None else ""
        return f"{where}{'' if where == '无门槛' else '打 '}{zhe_text(percent)}{cap}"
    return f"{where}减 {yuan(amount_fen)}"


def zhe_text(percent_off: int) -> str:
    """Percent off -> the Chinese discount: 10 -> "9折", 15 -> "8.5折", 5 -> "9.5折", 12 -> "8.8折"."""
    tenths = 100 - int(percent_off)  # 90 -> 9折
    whole, rest = divmod(tenths, 10)
    return f"{whole}折" if rest == 0 else f"{whole}.{rest}折"


def percent_off_from_zhe(text) -> int:
    """ "9" / "9折" / "8.5" / "8.8折" -> percent off (10 / 10 / 15 / 12). One decimal at most,
    0.1..9.9 折 (1..99% off); "10", "85" and the like are refused, never read as a percentage.
    Raises ValueError with the Chinese reason."""
    from decimal import Decimal, InvalidOperation

    value = str(text or "").strip().removesuffix("折").strip()
    try:
        zhe = Decimal(value)
    except InvalidOperation as exc:
        raise ValueError("请填写几折，例如 9 或 8.5") from exc
    if not zhe.is_finite() or zhe * 10 != int(zhe * 10) or not Decimal("0.1") <= zhe <= Decimal("9.9"):
        raise ValueError("请填写 0.1 到 9.9 之间的几折（最多一位小数），例如 9 或 8.5")
    return 100 - int(zhe * 10)


#: actor codes written by the services (OrderEvent.actor, AfterSale.decided_by ...) -> what staff read
ACTORS = {
    "customer": "顾客",
    "wechat": "微信支付通知",
    "wechat-notify": "微信支付通知",
    "wechat-refund-notify": "微信退款通知",
    "wechat:orderquery": "微信查单",
    "system": "系统",
    "system:timeout": "系统（超时未支付）",
    "system:auto": "系统（自动同意）",
    "system:auto-receive": "系统（自动确认收货）",
    "system:slot-passed": "系统（咨询时段已过）",
    "system:paid": "系统（支付后自动打印）",
    "system:cancel-policy": "系统（按取消政策）",
    "system:group-ended": "系统（拼团已结束）",
    "system:group-failed": "系统（拼团失败退款）",
    "system:deadline": "系统（拼团到期）",
}


def actor_text(actor: str | None) -> str:
    """``"staff:boss"`` -> "员工 boss"; ``"system:timeout"`` -> "系统（超时未支付）"; an unknown code as it is."""
    if not actor:
        return "-"
    if actor.startswith("staff:"):
        return f"员工 {actor[len('staff:') :]}"
    return ACTORS.get(actor, actor)


def shanghai(value) -> str:
    """An aware datetime -> "2026-12-01 20:00" in Shanghai time ("-" if none)."""
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M") if value else "-"
