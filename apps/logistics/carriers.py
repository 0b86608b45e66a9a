"""The carriers staff choose from when shipping: our code -> (Kuaidi100 ``com`` code, name)."""

from __future__ import annotations

# code: what staff pick and what is stored as Shipment.carrier_code is the provider's ``com``.
CARRIERS: dict[str, str] = {
    "shunfeng": "顺丰速运",
    "zhongtong": "中通快递",
    "yuantong": "圆通速递",
    "shentong": "申通快递",
    "yunda": "韵达快递",
    "ems": "EMS",
    "jd": "京东物流",
    "youzhengguonei": "邮政快递包裹",
    "jtexpress": "极兔速递",
}


# our code -> WeChat's delivery id (``express_company`` of wxa/sec/order/upload_shipping_info,
# WECHAT.md "Shipping information"; WeChat's list: 获取运力 id 列表 get_delivery_list).
WECHAT_DELIVERY_IDS: dict[str, str] = {
    "shunfeng": "SF",
    "zhongtong": "ZTO",
    "yuantong": "YTO",
    "shentong": "STO",
    "yunda": "YD",
    "ems": "EMS",
    "jd": "JD",
    "youzhengguonei": "YZPY",
    "jtexpress": "JTSD",
}


def wechat_delivery_id(code: str) -> str | None:
    """WeChat's ``express_company`` for carrier ``code`` (``"shunfeng"`` -> ``"SF"``), or None."""
    return WECHAT_DELIVERY_IDS.get(code)


def carrier_name(code: str) -> str | None:
    """The shown name of carrier ``code``, or None when the shop does not ship with it."""
    return CARRIERS.get(code)


def choices() -> list[tuple[str, str]]:
    """``[(code, "name (code)")]`` for forms."""
    return [(code, f"{name} ({code})") for code, name in CARRIERS.items()]
