"""Search, good_dates (the booking filter) and the rule, against the loaded summer of 2025."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.db import connection

from apps.almanac import selectors, synonyms
from apps.almanac.exceptions import DateOutOfRange, UnknownActivity
from apps.almanac.models import AlmanacDay

D = dt.date
JUNE = (D(2025, 6, 1), D(2025, 6, 30))


def dates(*isos: str) -> set[dt.date]:
    return {D.fromisoformat(s) for s in isos}


def test_good_dates_moving_house_in_june(summer):
    assert selectors.good_dates(activity="搬家", start=JUNE[0], end=JUNE[1]) == dates(
        "2025-06-04",
        "2025-06-07",
        "2025-06-08",
        "2025-06-10",
        "2025-06-11",
        "2025-06-19",
        "2025-06-20",
        "2025-06-22",
        "2025-06-28",
        "2025-06-29",
    )


def test_good_dates_opening_a_shop_in_june(summer):
    expected = dates(
        "2025-06-01",
        "2025-06-03",
        "2025-06-07",
        "2025-06-08",
        "2025-06-13",
        "2025-06-14",
        "2025-06-19",
        "2025-06-20",
        "2025-06-26",
    )
    assert selectors.good_dates(activity="开业", start=JUNE[0], end=JUNE[1]) == expected
    assert selectors.good_dates(activity="开市", start=JUNE[0], end=JUNE[1]) == expected


def test_good_dates_rule_one_term_yi_is_enough_any_term_ji_excludes(summer):
    may22 = AlmanacDay.objects.get(pk=D(2025, 5, 22))
    assert "移徙" in may22.yi and "入宅" in may22.ji  # the terms of 搬家 disagree
    may13 = AlmanacDay.objects.get(pk=D(2025, 5, 13))
    assert "入宅" in may13.yi and "移徙" not in may13.yi + may13.ji  # only one term listed

    may = selectors.good_dates(activity="搬家", start=D(2025, 5, 1), end=D(2025, 5, 31))
    assert D(2025, 5, 22) not in may  # 宜移徙 but 忌入宅: not a day for moving house
    assert D(2025, 5, 13) in may  # 宜入宅, 移徙 not mentioned: one 宜 term is enough
    # the term alone follows its own 宜/忌
    assert D(2025, 5, 22) in selectors.good_dates(activity="移徙", start=D(2025, 5, 1), end=D(2025, 5, 31))

    june20 = AlmanacDay.objects.get(pk=D(2025, 6, 20))
    assert "修造" in june20.yi and "动土" in june20.ji
    assert D(2025, 6, 20) not in selectors.good_dates(activity="装修", start=JUNE[0], end=JUNE[1])


def test_good_dates_errors_and_empty_range(summer):
    with pytest.raises(UnknownActivity) as err:
        selectors.good_dates(activity="搬迁新居", start=JUNE[0], end=JUNE[1])
    assert "搬迁" in err.value.detail["suggestions"]
    with pytest.raises(DateOutOfRange) as err:
        selectors.good_dates(activity="搬家", start=D(2025, 8, 25), end=D(2025, 9, 5))
    assert err.value.detail["loaded"] == [{"start": "2025-05-01", "end": "2025-08-31"}]
    assert (err.value.code, err.value.status) == ("not_found", 404)
    assert selectors.good_dates(activity="搬家", start=D(2025, 6, 2), end=D(2025, 6, 1)) == set()


def test_good_dates_unknown_word_is_checked_before_the_range(db):
    with pytest.raises(UnknownActivity):
        selectors.good_dates(activity="zzz", start=D(1800, 1, 1), end=D(1800, 1, 2))


def test_search_and_day_detail_always_agree(summer):
    """For every word and term, over 123 days: returned <=> (some term 宜 and no term 忌) in the day rows."""
    days = list(AlmanacDay.objects.order_by("date"))
    words = list(synonyms.SYNONYMS) + sorted(synonyms.TERMS)
    checked = 0
    for word in words:
        if all(t in synonyms.NEVER_YI for t in synonyms.SYNONYMS.get(word, (word,))):
            continue
        terms = selectors.resolve_activity(word)
        found = selectors.good_dates(activity=word, start=days[0].date, end=days[-1].date)
        expected = {d.date for d in days if any(t in d.yi for t in terms) and not any(t in d.ji for t in terms)}
        assert found == expected, word
        checked += 1
    # all but the 4 never-宜 terms (词讼, 乘船, 探病, 行丧) and the 4 words for them only
    assert checked == len(words) - 8 > 190


def test_search_api_agrees_with_day_api(summer, anon_api):
    for word in ("搬家", "结婚", "装修", "看病"):
        body = anon_api.get("/api/v1/almanac/search", {"activity": word, "start": "2025-06-01", "days": 61}).json()
        found = {r["date"] for r in body["results"]}
        for offset in range(61):
            date = (D(2025, 6, 1) + dt.timedelta(days=offset)).isoformat()
            day = anon_api.get(f"/api/v1/almanac/days/{date}").json()
            good = any(t in day["yi"] for t in body["terms"]) and not any(t in day["ji"] for t in body["terms"])
            assert (date in found) == good, (word, date)


def test_search_selector_answers_from_the_index_in_one_query(summer, django_assert_num_queries):
    with django_assert_num_queries(2):  # the loaded-range check + one SELECT over the index
        result = selectors.search(activity="搬家", start=D(2025, 6, 1), days=30)
    assert [d.date.isoformat() for d in result.days][:3] == ["2025-06-04", "2025-06-07", "2025-06-08"]
    assert (result.terms, result.end) == (["移徙", "入宅"], D(2025, 6, 30))


def test_search_query_reads_indexes_only(summer):
    sql, params = selectors.good_days(terms=["移徙", "入宅"], start=JUNE[0], end=JUNE[1]).query.sql_with_params()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # A 2,000-row test table: PostgreSQL may pick either index of almanacactivity (on the
            # full table it picks almanac_act_term_kind_date, apps/almanac/README.md "From the index"); no seq scan.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute("EXPLAIN " + sql, params)
            plan = "\n".join(row[0] for row in cursor.fetchall())
            assert "Seq Scan" not in plan
            assert "almanac_act_term_kind_date" in plan or "almanac_almanacactivity_pkey" in plan
        else:
            cursor.execute("EXPLAIN QUERY PLAN " + sql, params)
            plan = "\n".join(row[-1] for row in cursor.fetchall())
            assert "USING COVERING INDEX almanac_act_term_kind_date (term=? AND kind=? AND date>? AND date<?)" in plan
            assert "SCAN " not in plan  # every table is searched through an index, none scanned


def test_search_limit_gives_the_next_good_days(summer):
    result = selectors.search(activity="结婚", start=D(2025, 7, 1), days=62, limit=3)
    assert [d.date for d in result.days] == [D(2025, 7, 1), D(2025, 7, 4), D(2025, 7, 8)]


# --- the API -------------------------------------------------------------------------------


def test_search_api_answer(summer, anon_api):
    response = anon_api.get("/api/v1/almanac/search", {"activity": "搬家", "start": "2025-06-01", "days": 30})
    assert response.status_code == 200
    body = response.json()
    assert (body["activity"], body["terms"], body["start"], body["end"], body["count"]) == (
        "搬家",
        ["移徙", "入宅"],
        "2025-06-01",
        "2025-06-30",
        10,
    )
    assert body["rule"] == synonyms.RULE
    first = body["results"][0]
    assert first == {
        "date": "2025-06-04",
        "lunar_text": "五月初九",
        "yi": [
            "嫁娶",
            "冠笄",
            "祭祀",
            "出行",
            "移徙",
            "入宅",
            "作灶",
            "造车器",
            "补垣",
            "塞穴",
            "开厕",
            "破土",
            "启钻",
            "除服",
            "成服",
            "入殓",
        ],
        "ji": ["盖屋", "造桥", "安门", "安葬", "上梁"],
        "matched": ["移徙", "入宅"],
    }
    assert [r["date"] for r in body["results"]][-2:] == ["2025-06-28", "2025-06-29"]
    assert body["results"][-2]["matched"] == ["入宅"]  # 2025-06-28: 宜入宅 only


def test_search_api_start_defaults_to_today_in_shanghai(summer, anon_api, monkeypatch):
    from django.utils import timezone

    # 16:30 UTC on 31 May is 00:30 on 1 June in Shanghai
    monkeypatch.setattr(timezone, "now", lambda: dt.datetime(2025, 5, 31, 16, 30, tzinfo=dt.UTC))
    body = anon_api.get("/api/v1/almanac/search", {"activity": "结婚"}).json()
    assert (body["start"], body["end"]) == ("2025-06-01", "2025-06-30")


@pytest.mark.parametrize(
    "params, field",
    [
        ({}, "activity"),
        ({"activity": "结婚", "days": 0}, "days"),
        ({"activity": "结婚", "days": 367}, "days"),
        ({"activity": "结婚", "days": "x"}, "days"),
        ({"activity": "结婚", "start": "2025/06/01"}, "start"),
        ({"activity": "结婚", "limit": 0}, "limit"),
    ],
)
def test_search_api_bad_params_are_400_invalid(summer, anon_api, params, field):
    response = anon_api.get("/api/v1/almanac/search", params)
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert field in response.json()["detail"]


def test_search_api_unknown_word_is_400_with_suggestions(summer, anon_api):
    response = anon_api.get("/api/v1/almanac/search", {"activity": "搬迁新居", "start": "2025-06-01"})
    assert response.status_code == 400
    body = response.json()
    assert body["code"] == "invalid"
    assert body["detail"]["suggestions"][:4] == ["搬迁", "迁居", "乔迁", "搬家"]
    assert "搬迁新居" in body["detail"]["activity"][0]
    assert body["message"].startswith("黄历里没有“搬迁新居”这件事。您是不是要找：搬迁、迁居、乔迁、搬家")
    assert not re.search(r"[A-Za-z]", body["message"])  # a customer reads it


def test_search_api_window_outside_loaded_range_is_404_naming_it(summer, anon_api):
    response = anon_api.get("/api/v1/almanac/search", {"activity": "结婚", "start": "2025-08-15", "days": 30})
    assert response.status_code == 404
    body = response.json()
    assert body["code"] == "not_found"
    assert body["message"] == "暂无 2025-08-15 至 2025-09-13 的黄历；可查询的日期：2025-05-01 至 2025-08-31。"
    assert body["detail"]["loaded"] == [{"start": "2025-05-01", "end": "2025-08-31"}]


def test_search_api_needs_no_token_and_ignores_a_bad_one(summer, anon_api):
    anon_api.credentials(HTTP_AUTHORIZATION="Bearer not-a-token")
    response = anon_api.get("/api/v1/almanac/search", {"activity": "出行", "start": "2025-06-01", "days": 7})
    assert response.status_code == 200
    assert response.json()["terms"] == ["出行"]
