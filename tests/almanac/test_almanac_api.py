"""Day and month endpoints, the Redis cache, the activity list, the schema and the admin."""

from __future__ import annotations

import datetime as dt

import pytest

from apps.almanac import caching, synonyms
from apps.almanac.models import AlmanacDay

D = dt.date


def test_day_api_leap_day(summer, anon_api):
    response = anon_api.get("/api/v1/almanac/days/2025-07-25")
    assert response.status_code == 200
    assert response.json() == {
        "date": "2025-07-25",
        "lunar": {
            "year": 2025,
            "month": 6,
            "day": 1,
            "is_leap": True,
            "text": "闰六月初一",
            "month_text": "闰六月",
            "day_text": "初一",
            "year_ganzhi": "乙巳",
        },
        "ganzhi": {"year": "乙巳", "month": "癸未", "day": "乙未", "year_by_lichun": "乙巳"},
        "zodiac": "蛇",
        "solar_term": None,
        "solar_term_at": None,
        "yi": ["嫁娶", "祭祀", "出行", "裁衣", "冠笄", "交易", "雕刻", "纳财", "造畜稠", "造车器", "教牛马"],
        "ji": ["移徙", "入宅", "栽种", "动土", "破土", "作灶", "安葬", "行丧", "伐木", "上梁"],
        "chong": {"zodiac": "牛", "ganzhi": "己丑", "sha": "西", "text": "冲牛(己丑)煞西"},
        "pengzu": ["乙不栽植千株不长", "未不服药毒气入肠"],
        "zhishen": "玄武",
        "zhishen_type": "黑道",
        "jianchu": "建",
        "jishen": ["守日", "不将", "圣心"],
        "xiongsha": ["月建", "小时", "土府", "元武"],
        "festivals": [],
        "source": {"name": "lunar-python", "version": "1.4.8", "sect": 1},
    }


@pytest.mark.parametrize(
    "date, term, at",
    [
        ("2025-06-05", "芒种", "2025-06-05T17:56:32+08:00"),
        ("2025-08-23", "处暑", "2025-08-23T04:33:51+08:00"),
    ],
)
def test_day_api_solar_term_with_its_instant(summer, anon_api, date, term, at):
    body = anon_api.get(f"/api/v1/almanac/days/{date}").json()
    assert (body["solar_term"], body["solar_term_at"]) == (term, at)


def test_day_api_near_midnight_and_summer_time_terms_keep_beijing_time(load, anon_api):
    load(D(2021, 12, 21), D(2021, 12, 22))
    load(D(1988, 7, 7), D(1988, 7, 7))
    assert anon_api.get("/api/v1/almanac/days/2021-12-21").json()["solar_term_at"] == "2021-12-21T23:59:19+08:00"
    assert anon_api.get("/api/v1/almanac/days/2021-12-22").json()["solar_term"] is None
    assert anon_api.get("/api/v1/almanac/days/1988-07-07").json()["solar_term_at"] == "1988-07-07T05:32:54+08:00"


def test_day_api_matches_golden_new_year(load, anon_api, golden):
    load(D(2025, 1, 28), D(2025, 1, 29))
    eve = anon_api.get("/api/v1/almanac/days/2025-01-28").json()
    assert (eve["lunar"]["text"], eve["festivals"], eve["zodiac"]) == ("腊月廿九", ["除夕"], "龙")
    new_year = anon_api.get("/api/v1/almanac/days/2025-01-29").json()
    assert (new_year["lunar"]["text"], new_year["lunar"]["year"], new_year["zodiac"]) == ("正月初一", 2025, "蛇")
    assert (new_year["ganzhi"]["year"], new_year["ganzhi"]["year_by_lichun"]) == ("乙巳", "甲辰")
    assert new_year["yi"] == golden["2025-01-29"]["yi"] and new_year["ji"] == golden["2025-01-29"]["ji"]


@pytest.mark.parametrize("date", ["2025-02-30", "20250601", "2025-6-1", "today"])
def test_day_api_bad_date_is_400(summer, anon_api, date):
    response = anon_api.get(f"/api/v1/almanac/days/{date}")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and "date" in response.json()["detail"]


def test_day_api_unloaded_date_is_404_naming_the_loaded_range(summer, anon_api):
    response = anon_api.get("/api/v1/almanac/days/2030-01-01")
    assert response.status_code == 404
    assert response.json() == {
        "code": "not_found",
        "message": "暂无 2030-01-01 的黄历；可查询的日期：2025-05-01 至 2025-08-31。",
        "detail": {
            "start": "2030-01-01",
            "end": "2030-01-01",
            "loaded": [{"start": "2025-05-01", "end": "2025-08-31"}],
        },
    }


def test_day_api_nothing_loaded_says_to_run_the_loader(db, anon_api):
    response = anon_api.get("/api/v1/almanac/days/2025-06-01")
    assert response.status_code == 404
    assert "请运行 load_almanac" in response.json()["message"]


def test_month_api(summer, anon_api):
    response = anon_api.get("/api/v1/almanac/months/2025-07")
    assert response.status_code == 200
    body = response.json()
    assert body["month"] == "2025-07"
    assert [d["date"] for d in body["days"]] == [f"2025-07-{n:02d}" for n in range(1, 32)]
    assert body["days"][24]["lunar"]["text"] == "闰六月初一"
    assert [(d["date"], d["solar_term"]) for d in body["days"] if d["solar_term"]] == [
        ("2025-07-07", "小暑"),
        ("2025-07-22", "大暑"),
    ]
    single = anon_api.get("/api/v1/almanac/days/2025-07-25").json()
    assert body["days"][24] == single


@pytest.mark.parametrize("month, status", [("2025-09", 404), ("2025-04", 404), ("2025-13", 400), ("2025-7", 400)])
def test_month_api_errors(summer, anon_api, month, status):
    response = anon_api.get(f"/api/v1/almanac/months/{month}")
    assert response.status_code == status
    assert response.json()["code"] == ("not_found" if status == 404 else "invalid")


def test_month_api_partly_loaded_month_is_404(load, anon_api):
    load(D(2025, 6, 1), D(2025, 6, 15))
    response = anon_api.get("/api/v1/almanac/months/2025-06")
    assert response.status_code == 404
    assert "2025-06-01 至 2025-06-30" in response.json()["message"]


def test_api_answers_are_cached_until_the_next_load(summer, anon_api, django_assert_num_queries):
    url = "/api/v1/almanac/days/2025-06-04"
    assert anon_api.get(url).json()["lunar"]["text"] == "五月初九"
    AlmanacDay.objects.filter(pk=D(2025, 6, 4)).update(lunar_text="改过")
    with django_assert_num_queries(0):
        assert anon_api.get(url).json()["lunar"]["text"] == "五月初九"
    search = {"activity": "搬家", "start": "2025-06-01", "days": 30}
    with django_assert_num_queries(2):  # range check + the index query
        assert anon_api.get("/api/v1/almanac/search", search).json()["count"] == 10
    with django_assert_num_queries(0):
        assert anon_api.get("/api/v1/almanac/search", search).json()["count"] == 10
    caching.bump()  # what the loader does after committing
    assert anon_api.get(url).json()["lunar"]["text"] == "改过"


def test_api_cache_key_keeps_the_word_asked(summer, anon_api):
    params = {"start": "2025-06-01", "days": 30}
    assert anon_api.get("/api/v1/almanac/search", {**params, "activity": "搬家"}).json()["activity"] == "搬家"
    assert anon_api.get("/api/v1/almanac/search", {**params, "activity": "宜搬家"}).json()["activity"] == "宜搬家"


def test_api_reload_invalidates_the_cache(load, anon_api):
    load(D(2025, 6, 1), D(2025, 6, 30))
    assert anon_api.get("/api/v1/almanac/days/2025-06-04").json()["lunar"]["text"] == "五月初九"
    AlmanacDay.objects.filter(pk=D(2025, 6, 4)).update(lunar_text="stale")
    load(D(2025, 6, 1), D(2025, 6, 30), force=True)  # rewrites the row and bumps the generation
    assert anon_api.get("/api/v1/almanac/days/2025-06-04").json()["lunar"]["text"] == "五月初九"


def test_api_works_when_redis_is_down(summer, anon_api, monkeypatch):
    from django.core.cache import cache

    def down(*args, **kwargs):
        raise ConnectionError("redis is down")

    monkeypatch.setattr(cache, "get", down)
    monkeypatch.setattr(cache, "set", down)
    assert anon_api.get("/api/v1/almanac/days/2025-06-04").json()["lunar"]["text"] == "五月初九"


def test_activities_api_lists_the_synonym_table(db, anon_api):
    body = anon_api.get("/api/v1/almanac/activities").json()
    words = {w["word"]: w["terms"] for w in body["words"]}
    assert words["搬家"] == ["移徙", "入宅"] and words["结婚"] == ["嫁娶"]
    assert len(body["terms"]) == 111 and "移徙" in body["terms"]
    assert body["markers"] == sorted(["馀事勿取", "诸事不宜", "无"])
    assert body["rule"] == synonyms.RULE and "至少有一项为「宜」" in body["rule"]


def test_schema_describes_the_almanac_endpoints():
    from drf_spectacular.generators import SchemaGenerator

    from apps.almanac.api import urls

    schema = SchemaGenerator(patterns=urls.urlpatterns).get_schema(request=None, public=True)
    paths = schema["paths"]
    assert set(paths) == {
        "/almanac/days/{date}",
        "/almanac/months/{month}",
        "/almanac/search",
        "/almanac/activities",
    }
    search = paths["/almanac/search"]["get"]
    assert {p["name"] for p in search["parameters"]} == {"activity", "start", "days", "limit"}
    assert set(search["responses"]) == {"200", "400", "404"}
    day = schema["components"]["schemas"]["Day"]["properties"]
    assert {"date", "lunar", "ganzhi", "zodiac", "solar_term", "yi", "ji"} <= set(day)


def test_admin_lists_days_read_only(summer, admin_client):
    response = admin_client.get("/admin/almanac/almanacday/", {"q": "2025-07"})
    assert response.status_code == 200
    assert response.context["cl"].result_count == 31
    assert "闰六月初一" in response.content.decode()
    response = admin_client.get("/admin/almanac/almanacday/", {"solar_term": "芒种"})
    assert [d.date for d in response.context["cl"].result_list] == [D(2025, 6, 5)]
    assert admin_client.get("/admin/almanac/almanacday/2025-07-25/change/").status_code == 200
    assert admin_client.get("/admin/almanac/almanacday/add/").status_code == 403
    assert admin_client.get("/admin/almanac/almanacrange/").status_code == 200


def test_api_same_answers_whatever_the_process_tz(load, anon_api, golden):
    """Load and answer with the process in TZ=UTC, then in TZ=Asia/Shanghai: identical output."""
    import os
    import time

    def answers(tz: str) -> list:
        os.environ["TZ"] = tz
        time.tzset()
        caching.bump()
        load(D(2021, 12, 20), D(2021, 12, 23), force=True)
        days = [anon_api.get(f"/api/v1/almanac/days/2021-12-{n}").json() for n in (20, 21, 22, 23)]
        search = anon_api.get("/api/v1/almanac/search", {"activity": "出行", "start": "2021-12-20", "days": 4}).json()
        return [days, search]

    before = os.environ.get("TZ")
    try:
        utc = answers("UTC")
        shanghai = answers("Asia/Shanghai")
    finally:
        if before is None:
            os.environ.pop("TZ", None)
        else:
            os.environ["TZ"] = before
        time.tzset()
    assert utc == shanghai
    winter_solstice = utc[0][1]
    assert (winter_solstice["solar_term"], winter_solstice["solar_term_at"]) == ("冬至", "2021-12-21T23:59:19+08:00")
    assert winter_solstice["yi"] == golden["2021-12-21"]["yi"]
