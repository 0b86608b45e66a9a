"""China's 34 provincial-level divisions, by name: what staff tick in a freight template's
region editor and what an address's ``province`` is matched against.

Full names as WeChat's ``wx.chooseAddress`` gives them (``provinceName``: 广东省, 新疆维吾尔自治区,
北京市); :func:`province_canonical` also accepts the short name (新疆) and returns the full one.
"""

from __future__ import annotations

# (full name, short name), in the order of the national administrative division code (GB/T 2260).
PROVINCES: tuple[tuple[str, str], ...] = (
    ("北京市", "北京"),
    ("天津市", "天津"),
    ("河北省", "河北"),
    ("山西省", "山西"),
    ("内蒙古自治区", "内蒙古"),
    ("辽宁省", "辽宁"),
    ("吉林省", "吉林"),
    ("黑龙江省", "黑龙江"),
    ("上海市", "上海"),
    ("江苏省", "江苏"),
    ("浙江省", "浙江"),
    ("安徽省", "安徽"),
    ("福建省", "福建"),
    ("江西省", "江西"),
    ("山东省", "山东"),
    ("河南省", "河南"),
    ("湖北省", "湖北"),
    ("湖南省", "湖南"),
    ("广东省", "广东"),
    ("广西壮族自治区", "广西"),
    ("海南省", "海南"),
    ("重庆市", "重庆"),
    ("四川省", "四川"),
    ("贵州省", "贵州"),
    ("云南省", "云南"),
    ("西藏自治区", "西藏"),
    ("陕西省", "陕西"),
    ("甘肃省", "甘肃"),
    ("青海省", "青海"),
    ("宁夏回族自治区", "宁夏"),
    ("新疆维吾尔自治区", "新疆"),
    ("台湾省", "台湾"),
    ("香港特别行政区", "香港"),
    ("澳门特别行政区", "澳门"),
)
PROVINCE_NAMES: tuple[str, ...] = tuple(full for full, _ in PROVINCES)
PROVINCE_CHOICES: list[tuple[str, str]] = [(full, full) for full in PROVINCE_NAMES]

_BY_NAME = {name: full for full, short in PROVINCES for name in (full, short)}


def province_canonical(name: str) -> str | None:
    """The full name of the province ``name`` means (full or short name, or a longer spelling
    starting with the short name, e.g. 新疆维吾尔族自治区), or None for anything else."""
    name = (name or "").strip()
    if name in _BY_NAME:
        return _BY_NAME[name]
    for full, short in PROVINCES:
        if name.startswith(short):
            return full
    return None


def city_key(name: str) -> str:
    """A city name as compared in region rules: trimmed, without a trailing 市 (深圳市 == 深圳)."""
    name = (name or "").strip()
    return name[:-1] if name.endswith("市") and len(name) > 1 else name
