"""Auspicious booking: slots and a consultation's next slots only on days 宜 (not 忌) an activity."""

import datetime as dt

import pytest
from django.utils import timezone

from apps.almanac import services as almanac
from apps.almanac.selectors import day_get, good_dates

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded():
    today = timezone.localdate()
    almanac.almanac_load(start=today - dt.timedelta(days=1), end=today + dt.timedelta(days=45), workers=1)
    return today


def slot_dates(slots):
    return {dt.datetime.fromisoformat(s["start"]).date() for s in slots}


@pytest.mark.parametrize("word, term", [("开业", "开市"), ("出行", "出行"), ("结婚", "嫁娶")])
def test_slots_good_for_keeps_only_good_days(client, consultation, loaded, word, term):
    url = f"/api/v1/teachers/{consultation.teacher.pk}/slots"
    window = {"from": loaded.isoformat(), "to": (loaded + dt.timedelta(days=8)).isoformat()}
    everything = client.get(url, window).json()
    filtered = client.get(url, {**window, "good_for": word}).json()
    good = good_dates(activity=word, start=loaded, end=loaded + dt.timedelta(days=8))
    assert slot_dates(filtered) == slot_dates(everything) & good
    assert [s for s in everything if dt.datetime.fromisoformat(s["start"]).date() in good] == filtered
    for day in slot_dates(filtered):  # the rule, checked against the day detail
        detail = day_get(day)
        assert term in detail.yi and term not in detail.ji


def test_product_detail_next_slots_good_for(client, consultation, loaded):
    from apps.appointments.slots import slots_generate

    slots_generate(days=31)  # as make run does: an 出行 day comes within 15 days whatever the date and hour
    response = client.get(f"/api/v1/products/{consultation.product.pk}", {"good_for": "出行"}).json()
    good = good_dates(activity="出行", start=loaded, end=loaded + dt.timedelta(days=31))
    assert 0 < len(response["next_slots"]) <= 5
    assert slot_dates(response["next_slots"]) <= good
    assert [s["start"] for s in response["next_slots"]] == sorted(s["start"] for s in response["next_slots"])


def test_good_for_unknown_word_is_400_with_suggestions(client, consultation, loaded):
    response = client.get(f"/api/v1/teachers/{consultation.teacher.pk}/slots", {"good_for": "搬迁新居"})
    assert response.status_code == 400
    assert response.json()["code"] == "invalid"
    assert "搬家" in response.json()["detail"]["suggestions"]


def test_good_for_outside_loaded_almanac_is_404_for_slots_and_empty_for_product(client, consultation):
    response = client.get(f"/api/v1/teachers/{consultation.teacher.pk}/slots", {"good_for": "开业"})
    assert response.status_code == 404
    assert "loaded" in response.json()["detail"]
    detail = client.get(f"/api/v1/products/{consultation.product.pk}", {"good_for": "开业"}).json()
    assert detail["next_slots"] == []


def test_good_for_filters_the_availability_starts_of_the_first_service(client, hours_teacher, loaded):
    h = hours_teacher
    start, end = loaded, loaded + dt.timedelta(days=13)
    days = client.get(
        f"/api/v1/teachers/{h.teacher.pk}/availability",
        {"product_id": h.short.pk, "from": start.isoformat(), "to": end.isoformat()},
    ).json()["days"]
    good = good_dates(activity="出行", start=start, end=end)
    expected = [s for d in days if dt.date.fromisoformat(d["date"]) in good for s in d["starts"]]
    listed = client.get(
        f"/api/v1/teachers/{h.teacher.pk}/slots", {"from": start.isoformat(), "to": end.isoformat(), "good_for": "出行"}
    ).json()
    assert [s["start"] for s in listed] == expected and all(s["available"] for s in listed)
    assert expected and all(
        s["end"] == (dt.datetime.fromisoformat(s["start"]) + dt.timedelta(minutes=30)).isoformat() for s in listed
    )
