"""The official account's menu checked the way WeChat's ``menu/create`` checks it, so staff see
every problem next to its field before anything is sent (the editor's JSON is never trusted).

Limits (WeChat's 创建自定义菜单 parameter table; bytes are UTF-8, a Chinese character is 3):
1-3 top buttons; 1-5 sub-buttons under a top button that has them; ``name`` at most 16 bytes
on a top button, 60 on a sub-button; ``key`` at most 128 bytes; ``url`` at most 1024 bytes
(http/https). ``miniprogram`` needs ``appid``, ``pagepath`` and ``url`` (the page old clients
open). A top button with sub-buttons has no type of its own. The stored shape is WeChat's:
``[{"name", "type", <its fields>} | {"name", "sub_button": [...]}]``.
"""

from __future__ import annotations

import re

from starmall.errors import InvalidInput

MAX_TOP = 3
MAX_SUB = 5
NAME_BYTES_TOP = 16
NAME_BYTES_SUB = 60
KEY_BYTES = 128
URL_BYTES = 1024
PAGEPATH_BYTES = 1024  # not in WeChat's table: the same bound as a url, so nothing unbounded is stored

#: type -> (label staff read, the fields it needs, in the editor's order)
TYPES: dict[str, tuple[str, tuple[str, ...]]] = {
    "click": ("发送消息（点击事件）", ("key",)),
    "view": ("打开网页", ("url",)),
    "miniprogram": ("打开小程序", ("appid", "pagepath", "url")),
    "scancode_push": ("扫码", ("key",)),
    "scancode_waitmsg": ("扫码并等待消息", ("key",)),
    "pic_sysphoto": ("拍照发图", ("key",)),
    "pic_photo_or_album": ("拍照或相册发图", ("key",)),
    "pic_weixin": ("微信相册发图", ("key",)),
    "location_select": ("发送位置", ("key",)),
}
FIELD_LABELS = {"name": "名称", "key": "事件 key", "url": "网页链接", "appid": "小程序 appid", "pagepath": "小程序页面"}
_APPID = re.compile(r"^wx[0-9a-f]{16}$")


def _bytes(text: str) -> int:
    return len(text.encode("utf-8"))


def _text(item: dict, field: str) -> str:
    value = item.get(field)
    return value.strip() if isinstance(value, str) else ""


def _field_error(field: str, value: str, *, top: bool) -> str | None:
    """The Chinese error of one field's value (already stripped), or None."""
    label = FIELD_LABELS[field]
    if not value:
        return f"请填写{label}。"
    limit = {
        "name": NAME_BYTES_TOP if top else NAME_BYTES_SUB,
        "key": KEY_BYTES,
        "url": URL_BYTES,
        "pagepath": PAGEPATH_BYTES,
    }.get(field)
    if limit is not None and _bytes(value) > limit:
        return f"{label}最多 {limit} 字节（一个汉字 3 字节），现在 {_bytes(value)} 字节。"
    if field == "url" and not value.startswith(("http://", "https://")):
        return "网页链接应以 http:// 或 https:// 开头。"
    if field == "appid" and not _APPID.match(value):
        return "小程序 appid 应为 wx 加 16 位小写十六进制字符。"
    return None


def _leaf(item: dict, path: str, errors: dict[str, str], *, top: bool) -> dict:
    """A button that acts (no sub-buttons): its name, type and the type's fields only."""
    out = {"name": _text(item, "name")}
    if message := _field_error("name", out["name"], top=top):
        errors[f"{path}.name"] = message
    kind = item.get("type")
    if kind not in TYPES:
        errors[f"{path}.type"] = "请选择菜单类型。"
        return out
    out["type"] = kind
    for field in TYPES[kind][1]:
        out[field] = _text(item, field)
        if message := _field_error(field, out[field], top=top):
            errors[f"{path}.{field}"] = message
    return out


def menu_clean(buttons) -> list[dict]:
    """The menu as WeChat's ``button`` list, each button keeping only its type's fields (names,
    keys and urls stripped). Raises InvalidInput whose ``detail["fields"]`` maps a path —
    ``"menu"``, ``"0.name"``, ``"1.sub.2.url"`` (top button 1's third sub-button) — to the
    Chinese error of that field; ``message`` counts them."""
    errors: dict[str, str] = {}
    if not isinstance(buttons, list) or not 1 <= len(buttons) <= MAX_TOP:
        raise InvalidInput(f"一级菜单应为 1 到 {MAX_TOP} 个。", fields={"menu": f"一级菜单应为 1 到 {MAX_TOP} 个。"})
    out = []
    for i, button in enumerate(buttons):
        button = button if isinstance(button, dict) else {}
        subs = button.get("sub_button")
        if not subs:
            out.append(_leaf(button, str(i), errors, top=True))
            continue
        parent = {"name": _text(button, "name"), "sub_button": []}
        if message := _field_error("name", parent["name"], top=True):
            errors[f"{i}.name"] = message
        if not isinstance(subs, list) or len(subs) > MAX_SUB:
            errors[f"{i}.sub"] = f"每个一级菜单最多 {MAX_SUB} 个子菜单。"
            subs = subs[:MAX_SUB] if isinstance(subs, list) else []
        for j, sub in enumerate(subs):
            parent["sub_button"].append(_leaf(sub if isinstance(sub, dict) else {}, f"{i}.sub.{j}", errors, top=False))
        out.append(parent)
    if errors:
        raise InvalidInput(f"菜单有 {len(errors)} 处需要修改。", fields=errors)
    return out
