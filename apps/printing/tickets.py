"""A paid order's receipt for a 58 mm cloud printer, in 飞鹅's markup.

The layout lives in ``templates/printing/ticket.txt``; this module gives it rows already cut to
the paper: :data:`WIDTH` (32) cells a line, a CJK (East Asian wide or fullwidth) character taking
two (飞鹅's 58 mm rule). Markup: ``<CB>`` centred double size (each cell counts twice), ``<BR>``
a line break, ``<C>`` centred. Amounts are yuan with two decimals from fen; times are Shanghai's.
"""

from __future__ import annotations

import re
import unicodedata

from django.template.loader import render_to_string
from django.utils import timezone

from apps.orders.models import Order
from starmall.admin_display import address_text, specs_text
from starmall.admin_money import yuan
from starmall.shop import shop_name

WIDTH = 32
TAG = re.compile(r"</?(?:CB|C|B|BR|BOLD|RIGHT|L|W|CUT|QR)>")


def plain(text: str) -> str:
    """Customer or staff text made inert for the printer: ``<`` and ``>`` become their fullwidth
    forms, so a remark cannot carry 飞鹅 markup (``<CUT>``, ``<QR>…``) onto the paper."""
    return str(text).replace("<", "＜").replace(">", "＞")


def cells(text: str) -> int:
    """Printed width: 2 for a wide or fullwidth character (汉字, ，), 1 otherwise."""
    return sum(2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1 for ch in text)


def wrap(text: str, width: int = WIDTH) -> list[str]:
    """``text`` cut into lines of at most ``width`` cells (never splitting a character)."""
    lines, line, used = [], "", 0
    for ch in " ".join(text.split()):
        w = cells(ch)
        if used + w > width:
            lines.append(line.rstrip())
            line, used = ("", 0) if ch == " " else (ch, w)
            continue
        line, used = line + ch, used + w
    if line.strip() or not lines:
        lines.append(line.rstrip())
    return lines


def clip(text: str, width: int) -> str:
    """``text`` cut to ``width`` cells (an ellipsis-free cut: receipts are read, not styled)."""
    out, used = "", 0
    for ch in text:
        if used + cells(ch) > width:
            break
        out, used = out + ch, used + cells(ch)
    return out


def pair(left: str, right: str, width: int = WIDTH) -> str:
    """``left`` and ``right`` on one line, right-aligned; the left side is cut to fit."""
    left = clip(left, width - cells(right) - 1)
    return left + " " * (width - cells(left) - cells(right)) + right


def line_rows(order: Order) -> list[str]:
    """Each line: its name and specs (wrapped), then ``单价 x数量  金额`` right-aligned."""
    rows = []
    for line in order.lines.all().order_by("id"):
        specs = specs_text(line.specs)
        rows += wrap(plain(line.name if specs == "-" else f"{line.name}（{specs}）"))
        rows.append(pair("", f"{yuan(line.price_fen)} x{line.quantity}  {yuan(line.amount_fen)}"))
    return rows


def money_rows(order: Order) -> list[str]:
    """商品, 运费, each discount that applies, 实付."""
    off = order.coupon_fen + order.points_fen + order.member_fen - order.adjust_fen
    rows = [pair("商品金额", yuan(order.goods_fen)), pair("运费", yuan(order.freight_fen))]
    if off:
        rows.append(pair("优惠", f"-{yuan(off)}" if off > 0 else yuan(-off)))
    rows.append(pair("实付", yuan(order.pay_fen)))
    return rows


def ticket_render(order: Order) -> str:
    """The receipt's 飞鹅 markup (``<BR>`` ends every line); no line wider than the paper."""
    at = timezone.localtime(order.paid_at or order.created_at).strftime("%Y-%m-%d %H:%M:%S")
    context = {
        "shop": clip(plain(shop_name()), WIDTH // 2),  # <CB> doubles every cell
        "head": [
            row
            for text in (f"订单号：{order.order_no}", f"时间：{at}", f"类型：{order.get_kind_display()}")
            for row in wrap(text)
        ],
        "rule": "-" * WIDTH,
        "lines": line_rows(order),
        "money": money_rows(order),
        "receiver": wrap(plain(f"收货：{address_text(order.address)}")) if order.address else [],
        "remark": wrap(plain(f"备注：{order.remark}")) if order.remark else [],
    }
    text = render_to_string("printing/ticket.txt", context)
    return "".join(line.strip("\n") for line in text.splitlines() if line.strip())


def ticket_lines(content: str) -> list[tuple[str, int]]:
    """The printed lines of a ticket: ``(text without markup, cells it takes)``, a ``<CB>`` or
    ``<B>`` (double size) line taking twice its characters' cells."""
    out = []
    for raw in content.split("<BR>"):
        text = TAG.sub("", raw)
        if text:
            out.append((text, cells(text) * (2 if "<CB>" in raw or "<B>" in raw else 1)))
    return out
