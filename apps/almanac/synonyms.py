"""The synonym table: the words people type -> the almanac's 宜/忌 terms, and the rule.

Nobody types 移徙; they type 搬家. :data:`SYNONYMS` maps everyday words to the terms of
lunar-python's day 宜/忌 table (:data:`TERMS`, the 111 activities it can produce, checked against
the library by the tests); every term is also a word for itself. The rule (:data:`RULE`), used by
the search API *and* the booking filter (``selectors.good_dates``): a day is good for a word when
**at least one of its terms is 宜 that day and none of its terms is 忌**. Markers
(:data:`MARKERS`) are not activities: shown with the day, never indexed or searchable.
"""

from __future__ import annotations

import difflib
import re

from apps.almanac.exceptions import ActivityNeverAuspicious, UnknownActivity

# A word stands for one undertaking and each of its terms for a part of it (搬家 = 移徙 moving out +
# 入宅 entering the new home): the almanac rarely lists both parts on one day, so demanding all would
# hide most good days, but a day that warns against any part (宜移徙 but 忌入宅) is not recommended.
RULE = "某天只要这个活动对应的黄历用语中至少有一项为「宜」，且没有一项为「忌」，就会列出。"

# 馀事勿取 "nothing else", 诸事不宜 "nothing at all", 无 "none listed".
MARKERS: frozenset[str] = frozenset({"馀事勿取", "诸事不宜", "无"})

# Every activity term lunar-python 1.4.8's day table produces (its whole 60x60 domain),
# grouped by theme for reading; tests/almanac/test_synonyms.py compares it with the library.
TERMS: frozenset[str] = frozenset(
    """
    祭祀 祈福 求嗣 开光 塑绘 斋醮 酬神 造庙 谢土 出火 雕刻 普渡 安香 解除
    嫁娶 纳采 问名 纳婿 归宁 订盟 冠笄 合帐 安床 会亲友 进人口 分居
    修坟 启钻 破土 安葬 立碑 成服 除服 开生坟 合寿木 入殓 移柩 行丧
    移徙 入宅 出行 赴任 乘船 归岫
    修造 起基 动土 上梁 竖柱 盖屋 合脊 拆卸 破屋 坏垣 补垣 修饰垣墙 修门 安门 开柱眼
    定磉 架马 作梁 作灶 造仓 塞穴 开厕 平治道涂 造桥 筑堤 开池 开渠 掘井 放水 扫舍
    开市 立券 交易 纳财 挂匾 开仓 出货财 置产 雇佣
    安机械 造车器 造船 造畜稠 安碓磑 经络 割蜜 栽种 伐木 取渔 结网 牧养 纳畜 教牛马
    捕捉 畋猎 断蚁
    入学 习艺 理发 整手足甲 沐浴 裁衣 求医 治病 针灸 探病 词讼
    """.split()
)

# Terms the table only ever lists under 忌: a search for them can never return a day.
NEVER_YI: frozenset[str] = frozenset({"乘船", "探病", "行丧", "词讼"})

# Everyday word -> almanac terms (in the order they are reported). Keep entries to what an
# almanac reader would agree on; every target must be in TERMS (tested).
SYNONYMS: dict[str, tuple[str, ...]] = {
    # moving house
    "搬家": ("移徙", "入宅"),
    "乔迁": ("移徙", "入宅"),
    "搬迁": ("移徙", "入宅"),
    "迁居": ("移徙", "入宅"),
    "入伙": ("入宅", "移徙"),
    "入住": ("入宅",),
    "进宅": ("入宅",),
    "进新房": ("入宅",),
    # marriage
    "结婚": ("嫁娶",),
    "婚礼": ("嫁娶",),
    "办婚礼": ("嫁娶",),
    "出嫁": ("嫁娶",),
    "娶亲": ("嫁娶",),
    "成亲": ("嫁娶",),
    "领证": ("嫁娶",),
    "订婚": ("订盟", "纳采"),
    "提亲": ("纳采",),
    "下聘": ("纳采",),
    "回娘家": ("归宁",),
    "求子": ("求嗣",),
    # business
    "开业": ("开市",),
    "开张": ("开市",),
    "开店": ("开市",),
    "开门营业": ("开市",),
    "签约": ("立券", "交易"),
    "签合同": ("立券", "交易"),
    "买卖": ("交易",),
    "收账": ("纳财",),
    "求财": ("纳财",),
    "买房": ("置产",),
    "置业": ("置产",),
    "挂牌": ("挂匾",),
    "招聘": ("雇佣",),
    "雇人": ("雇佣",),
    "上任": ("赴任",),
    "入职": ("赴任",),
    "就职": ("赴任",),
    # building
    "装修": ("修造", "动土"),
    "动工": ("修造", "动土"),
    "开工": ("修造", "动土"),
    "施工": ("修造", "动土"),
    "奠基": ("起基", "动土"),
    "盖房": ("盖屋", "修造"),
    "建房": ("盖屋", "修造"),
    "拆房": ("拆卸",),
    "装门": ("安门",),
    "打井": ("掘井",),
    "修路": ("平治道涂",),
    # travel
    "旅游": ("出行",),
    "旅行": ("出行",),
    "出差": ("出行",),
    "出远门": ("出行",),
    "坐船": ("乘船",),
    # health and body
    "看病": ("求医", "治病"),
    "就医": ("求医", "治病"),
    "手术": ("求医", "治病"),
    "剪发": ("理发",),
    "剃头": ("理发",),
    "剪头发": ("理发",),
    "剪指甲": ("整手足甲",),
    "洗澡": ("沐浴",),
    "探望病人": ("探病",),
    # funerals and ancestors
    "下葬": ("安葬",),
    "葬礼": ("安葬",),
    "殡葬": ("安葬",),
    "出殡": ("安葬", "行丧"),
    "扫墓": ("祭祀",),
    "上坟": ("祭祀",),
    "祭祖": ("祭祀",),
    "祭拜": ("祭祀",),
    "拜神": ("祈福",),
    "烧香": ("祈福",),
    # daily life
    "上学": ("入学",),
    "开学": ("入学",),
    "拜师": ("习艺",),
    "学艺": ("习艺",),
    "做衣服": ("裁衣",),
    "买床": ("安床",),
    "聚会": ("会亲友",),
    "会友": ("会亲友",),
    "拜访": ("会亲友",),
    "分家": ("分居",),
    "种植": ("栽种",),
    "种树": ("栽种",),
    "钓鱼": ("取渔",),
    "打猎": ("畋猎",),
    "养宠物": ("纳畜",),
    "养殖": ("牧养", "纳畜"),
    "打官司": ("词讼",),
    "诉讼": ("词讼",),
}

# The words shown when an unknown word resembles nothing we know.
POPULAR: tuple[str, ...] = ("搬家", "结婚", "开业", "装修", "签约", "出行", "理发", "看病", "安葬")

# Traditional -> simplified for the characters of the words above (繁体 input from HK/TW users).
_TRADITIONAL = str.maketrans(
    "開張結訂婚禮遷搬裝簽約買賣收賬財產牌聘雇職動蓋門鋪路遊差遠醫術剪髮頭甲澡葬殯墳祭燒學藝衣床會訪種獵寵養殖訟業貨陽",
    "开张结订婚礼迁搬装签约买卖收账财产牌聘雇职动盖门铺路游差远医术剪发头甲澡葬殡坟祭烧学艺衣床会访种猎宠养殖讼业货阳",
)
# Decorations people add around the activity: 宜搬家, 搬家吉日, 结婚的好日子 ...
_AFFIXES = re.compile(r"^(?:宜|适合|今天|哪天)|(?:的?(?:黄道)?(?:吉日|好日子|日子|吉时)|吉|日)$")


def normalize(word: str) -> str:
    """Strip spaces and decorations (宜…, …吉日, …的好日子), fold traditional characters."""
    text = "".join(word.split()).translate(_TRADITIONAL)
    stripped = _AFFIXES.sub("", text)
    return stripped or text


def known_words() -> list[str]:
    """All words a search accepts: the synonym table's words, then the terms, sorted."""
    return sorted(SYNONYMS) + sorted(TERMS - set(SYNONYMS))


def searchable_words() -> list[str]:
    """The known words :func:`resolve` answers terms for (those not only ever 忌): the schema's enum."""
    return [word for word in known_words() if not all(term in NEVER_YI for term in SYNONYMS.get(word, (word,)))]


def suggestions(word: str, limit: int = 8) -> list[str]:
    """Known words/terms closest to ``word``: those sharing characters, most similar first.

    Chinese activity words are two to four characters, so edit distance says little; sharing a
    character (搬迁 ~ 搬家, 乔迁) is the useful signal. Falls back to :data:`POPULAR`.
    """
    chars = set(word)
    scored = []
    for known in known_words():
        shared = len(chars & set(known))
        if shared:
            ratio = difflib.SequenceMatcher(None, word, known).ratio()
            scored.append((-shared, -ratio, known not in SYNONYMS, known))
    scored.sort()
    found = [known for *_, known in scored[:limit]]
    return found or list(POPULAR)


def resolve(word: str) -> list[str]:
    """The almanac terms an everyday word or a term stands for, e.g. 搬家 -> [移徙, 入宅].

    Raises UnknownActivity (with close known words) for anything else, markers included, and
    ActivityNeverAuspicious when every term only ever appears under 忌 (乘船, 探病, 行丧, 词讼).
    """
    key = normalize(word)
    if key in SYNONYMS:
        terms = list(SYNONYMS[key])
    elif key in TERMS:
        terms = [key]
    else:
        raise UnknownActivity(word, suggestions(key))
    if all(term in NEVER_YI for term in terms):
        raise ActivityNeverAuspicious(word, terms)
    return terms
