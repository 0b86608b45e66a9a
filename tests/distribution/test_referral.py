"""Referral binding: by the login's scene (first login only), by POST /me/referrer; never
oneself, never a loop, never rebound; channel visits and registrations."""

import pytest

from apps.distribution import channels, referral
from apps.distribution.models import Channel, Distributor

pytestmark = pytest.mark.django_db


def login(client, code, scene=None):
    body = {"code": code} if scene is None else {"code": code, "scene": scene}
    return client.post("/api/v1/auth/wechat/login", body, format="json")


def test_scene_binds_the_referrer_on_the_first_login_only(wechat, make_api, make_customer):
    a, other = make_customer(), make_customer()
    code_a = referral.distributor_for(customer_id=a.pk).referral_code
    code_other = referral.distributor_for(customer_id=other.pk).referral_code
    client = make_api()
    first = login(client, wechat.state.issue_login_code("oNewCustomer0000000000000001").code, f"r={code_a}")
    assert first.status_code == 200
    me = Distributor.objects.get(customer_id=first.json()["user"]["id"])
    assert me.referrer_id == referral.distributor_for(customer_id=a.pk).pk and me.bound_at is not None
    again = login(client, wechat.state.issue_login_code("oNewCustomer0000000000000001").code, f"r={code_other}")
    assert again.status_code == 200
    assert Distributor.objects.get(pk=me.pk).referrer_id == referral.distributor_for(customer_id=a.pk).pk


def test_a_second_login_with_a_code_does_not_bind_an_existing_customer(wechat, make_api, make_customer):
    a = make_customer()
    code_a = referral.distributor_for(customer_id=a.pk).referral_code
    client = make_api()
    login(client, wechat.state.issue_login_code("oOldCustomer0000000000000001").code)
    second = login(client, wechat.state.issue_login_code("oOldCustomer0000000000000001").code, f"r={code_a}")
    assert second.status_code == 200
    assert Distributor.objects.get(customer__openid="oOldCustomer0000000000000001").referrer_id is None


@pytest.mark.parametrize(
    "scene", ["", "r=", "r=NOSUCHCODE", "x=1", "r=../..", "garbage&&==", "c=NOPE", 12345, "r=" + "A" * 200]
)
def test_odd_scenes_are_ignored_never_an_error(wechat, make_api, scene):
    response = login(make_api(), wechat.state.issue_login_code().code, scene)
    assert response.status_code == 200, response.json()
    assert Distributor.objects.get(customer_id=response.json()["user"]["id"]).referrer_id is None


def test_channel_scene_counts_visits_and_a_registration_on_first_login(wechat, make_api):
    channel = Channel.objects.create(code="SHOP01", name="门店海报")
    client = make_api()
    login(client, wechat.state.issue_login_code("oChannelUser000000000000001").code, "c=SHOP01")
    login(client, wechat.state.issue_login_code("oChannelUser000000000000001").code, "c=SHOP01")
    login(client, wechat.state.issue_login_code().code, "c=SHOP01")
    channel.refresh_from_db()
    assert (channel.visits, channel.registrations) == (3, 2)
    assert Distributor.objects.filter(channel=channel).count() == 2
    assert channels.channel_scan_record("SHOP01") is True
    assert channels.channel_scan_record("NOPE") is False
    assert Channel.objects.get(pk=channel.pk).visits == 4


def test_bind_later_refuses_self_loop_rebind_and_unknown(make_customer, make_api):
    a, b, c = make_customer(), make_customer(), make_customer()
    code = {x.pk: referral.distributor_for(customer_id=x.pk).referral_code for x in (a, b, c)}
    api_a, api_b, api_c = make_api(a), make_api(b), make_api(c)
    own = api_a.post("/api/v1/me/referrer", {"code": code[a.pk]}, format="json")
    assert (own.status_code, own.json()["code"]) == (400, "invalid")
    assert api_a.post("/api/v1/me/referrer", {"code": "ZZZZZZZZ"}, format="json").status_code == 404
    ok = api_b.post("/api/v1/me/referrer", {"code": code[a.pk]}, format="json")
    assert ok.status_code == 200 and ok.json() == {"referrer": {"nickname": a.nickname}}
    assert api_c.post("/api/v1/me/referrer", {"code": code[b.pk].lower()}, format="json").status_code == 200
    loop = api_a.post("/api/v1/me/referrer", {"code": code[c.pk]}, format="json")  # a <- b <- c <- a
    assert (loop.status_code, loop.json()["code"]) == (400, "invalid")
    rebind = api_c.post("/api/v1/me/referrer", {"code": code[a.pk]}, format="json")
    assert (rebind.status_code, rebind.json()["code"]) == (409, "invalid_state")
    assert Distributor.objects.get(customer=c).referrer.customer_id == b.pk
    assert Distributor.objects.get(customer=a).referrer_id is None
    assert api_a.post("/api/v1/me/referrer", {}, format="json").status_code == 400
    assert make_api().post("/api/v1/me/referrer", {"code": code[a.pk]}, format="json").status_code == 401


def test_distribution_summary_and_team(chain, make_api):
    a, b, c = chain
    summary = make_api(a).get("/api/v1/me/distribution").json()
    assert summary["referrer"] is None and (summary["team_level1"], summary["team_level2"]) == (1, 1)
    assert summary["available_fen"] == summary["frozen_fen"] == summary["withdrawn_fen"] == 0
    assert make_api(c).get("/api/v1/me/distribution").json()["referrer"] == {"nickname": b.nickname}
    team1 = make_api(a).get("/api/v1/me/team?level=1").json()
    assert team1["count"] == 1 and team1["results"][0]["nickname"] == b.nickname
    assert set(team1["results"][0]) == {"nickname", "avatar_url", "joined_at", "order_count"}
    assert make_api(a).get("/api/v1/me/team?level=2").json()["results"][0]["nickname"] == c.nickname
    assert make_api(a).get("/api/v1/me/team?level=3").status_code == 400


def test_referral_codes_are_unique_per_customer(make_customer):
    codes = {referral.distributor_for(customer_id=make_customer().pk).referral_code for _ in range(30)}
    assert len(codes) == 30
    someone = make_customer()
    assert referral.distributor_for(customer_id=someone.pk).pk == referral.distributor_for(customer_id=someone.pk).pk
