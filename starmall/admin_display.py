"""Readable text for the JSON snapshots the admin shows (addresses, specs), Shanghai times."""

from __future__ import annotations

from django.utils import timezone


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


def shanghai(value) -> str:
    """An aware datetime -> "2026-12-01 20:00" in Shanghai time ("-" if none)."""
    return timezone.localtime(value).strftime("%Y-%m-%d %H:%M") if value else "-"
