"""The synonym table and its rule (no database)."""

from __future__ import annotations

import pytest

from apps.almanac import selectors, synonyms
from apps.almanac.exceptions import ActivityNeverAuspicious, UnknownActivity


@pytest.mark.parametrize(
    "word, terms",
    [
        # the synonym table (DESIGN.md: 搬家 -> 移徙/入宅 ...)
        ("搬家", ["移徙", "入宅"]),
        ("乔迁", ["移徙", "入宅"]),
        ("结婚", ["嫁娶"]),
        ("开业", ["开市"]),
        ("开张", ["开市"]),
        ("装修", ["修造", "动土"]),
        ("动工", ["修造", "动土"]),
        ("签约", ["立券", "交易"]),
        ("看病", ["求医", "治病"]),
        ("理发", ["理发"]),
        ("出行", ["出行"]),
        ("安葬", ["安葬"]),
        # a few more everyday words
        ("订婚", ["订盟", "纳采"]),
        ("旅游", ["出行"]),
        ("剪头发", ["理发"]),
        ("入职", ["赴任"]),
        ("出殡", ["安葬", "行丧"]),
        # terms stand for themselves
        ("移徙", ["移徙"]),
        ("嫁娶", ["嫁娶"]),
        ("平治道涂", ["平治道涂"]),
    ],
)
def test_synonyms_resolve(word, terms):
    assert synonyms.resolve(word) == terms
    assert selectors.resolve_activity(word) == terms


@pytest.mark.parametrize(
    "typed, terms",
    [
        (" 搬 家 ", ["移徙", "入宅"]),
        ("宜搬家", ["移徙", "入宅"]),
        ("搬家吉日", ["移徙", "入宅"]),
        ("结婚的好日子", ["嫁娶"]),
        ("开业黄道吉日", ["开市"]),
        ("結婚", ["嫁娶"]),  # traditional characters
        ("開業", ["开市"]),
        ("裝修", ["修造", "动土"]),
    ],
)
def test_synonyms_resolve_normalizes_what_people_type(typed, terms):
    assert synonyms.resolve(typed) == terms


def test_synonyms_every_target_is_a_term_and_no_word_is_a_marker():
    for word, terms in synonyms.SYNONYMS.items():
        assert terms and set(terms) <= synonyms.TERMS, word
        assert len(set(terms)) == len(terms), word
        assert word not in synonyms.MARKERS
    assert not synonyms.MARKERS & synonyms.TERMS
    assert set(synonyms.POPULAR) <= set(synonyms.SYNONYMS) | synonyms.TERMS


def test_synonyms_every_term_resolves_to_itself_unless_never_yi():
    for term in synonyms.TERMS - synonyms.NEVER_YI:
        expected = list(synonyms.SYNONYMS[term]) if term in synonyms.SYNONYMS else [term]
        assert synonyms.resolve(term) == expected


@pytest.mark.parametrize("marker", ["馀事勿取", "诸事不宜", "无"])
def test_synonyms_markers_are_not_activities(marker):
    with pytest.raises(UnknownActivity):
        synonyms.resolve(marker)


def test_synonyms_unknown_word_lists_close_known_words():
    with pytest.raises(UnknownActivity) as err:
        synonyms.resolve("搬迁新居")
    exc = err.value
    assert (exc.code, exc.status) == ("invalid", 400)
    assert exc.detail["suggestions"][:4] == ["搬迁", "迁居", "乔迁", "搬家"]
    assert exc.detail["activity"] == [exc.message]
    assert "搬迁新居" in exc.message and "搬迁" in exc.message


def test_synonyms_unknown_word_sharing_no_character_gets_the_popular_words():
    with pytest.raises(UnknownActivity) as err:
        synonyms.resolve("xyz")
    assert err.value.detail["suggestions"] == list(synonyms.POPULAR)


def test_synonyms_suggest_terms_too():
    with pytest.raises(UnknownActivity) as err:
        synonyms.resolve("移居")
    assert "移徙" in err.value.detail["suggestions"]


@pytest.mark.parametrize("word", ["词讼", "打官司", "乘船", "坐船", "探病", "行丧"])
def test_synonyms_never_auspicious_words_say_so(word):
    with pytest.raises(ActivityNeverAuspicious) as err:
        synonyms.resolve(word)
    assert (err.value.code, err.value.status) == ("invalid", 400)
    assert "忌" in err.value.message


def test_synonyms_rule_is_stated():
    assert "至少有一项为「宜」" in synonyms.RULE and "没有一项为「忌」" in synonyms.RULE  # customers read it: Chinese
