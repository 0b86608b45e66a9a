"""Phone numbers: by the getPhoneNumber code (sandbox), by SMS code (Tencent Cloud SMS sandbox,
signed TC3-HMAC-SHA256), the throttles of API.md, codes hashed, used once, 5 minutes."""

from __future__ import annotations

import datetime as dt

import pytest
import requests
from django.utils import timezone

from apps.accounts import phones
from apps.accounts.exceptions import SmsCodeInvalid, SmsCodeTooManyTries
from apps.accounts.models import Customer, SmsCode

PHONE = "13912345678"


@pytest.fixture
def sms(wechat, settings):
    """SMS through the sandbox's Tencent Cloud SMS; returns a reader of what it accepted."""
    settings.SMS_BACKEND = "apps.accounts.sms.TencentSmsBackend"
    settings.SMS_TENCENT_ENDPOINT = f"{wechat.url}tencent-sms/"

    def sent() -> list[dict]:
        return requests.get(f"{wechat.url}sandbox/sms", timeout=5).json()["messages"]

    return sent


def _code_of(sent, phone=PHONE) -> str:
    return [m for m in sent() if m["phone"] == f"+86{phone}"][-1]["params"][0]


def test_sms_code_is_sent_signed_stored_hashed_and_sets_the_phone_once(api, customer, sms):
    assert api.post("/api/v1/sms/codes", {"phone": PHONE}, format="json").status_code == 204
    [message] = sms()
    code = message["params"][0]
    assert (message["phone"], message["template_id"], message["sign_name"], len(code)) == (
        "+8613912345678",
        "100001",
        "星商城",
        6,
    )
    row = SmsCode.objects.get()
    assert code not in row.code_hash and row.code_hash == phones.code_hash(PHONE, code)

    wrong = api.post(
        "/api/v1/me/phone", {"phone": PHONE, "sms_code": "000000" if code != "000000" else "111111"}, format="json"
    )
    assert wrong.status_code == 400 and wrong.json()["code"] == "invalid" and "sms_code" in wrong.json()["detail"]
    ok = api.post("/api/v1/me/phone", {"phone": PHONE, "sms_code": code}, format="json")
    assert ok.status_code == 200 and ok.json()["phone"] == PHONE
    assert Customer.objects.get(pk=customer.pk).phone == PHONE
    again = api.post("/api/v1/me/phone", {"phone": PHONE, "sms_code": code}, format="json")
    assert again.status_code == 400 and "sms_code" in again.json()["detail"]  # used once
    row.refresh_from_db()
    assert row.used_at is not None and row.attempts == 2


def test_sms_code_expires_after_five_minutes(customer, sms):
    phones.sms_code_send(customer=customer, phone=PHONE)
    code = _code_of(sms)
    later = timezone.now() + dt.timedelta(minutes=5, seconds=1)
    with pytest.raises(SmsCodeInvalid):
        phones.phone_set_by_sms(customer=customer, phone=PHONE, sms_code=code, now=later)
    assert Customer.objects.get(pk=customer.pk).phone == ""


def test_sms_code_needs_a_token(make_api, db):
    answer = make_api().post("/api/v1/sms/codes", {"phone": PHONE}, format="json")
    assert answer.status_code == 401


def test_sms_codes_one_a_minute_and_a_daily_cap_per_phone_and_per_address(api, make_api, make_customer, sms, settings):
    settings.SMS_CODES_PER_DAY = 3
    assert api.post("/api/v1/sms/codes", {"phone": PHONE}, format="json").status_code == 204
    second = api.post("/api/v1/sms/codes", {"phone": PHONE}, format="json")
    assert second.status_code == 429 and second.json()["code"] == "throttled"
    # the same address, another phone: the address's minute is taken too
    assert api.post("/api/v1/sms/codes", {"phone": "13900000001"}, format="json").status_code == 429
    assert len(sms()) == 1
    # from other addresses the phone's daily cap (3) still holds once the minute passed
    from django.core.cache import cache

    statuses = []
    for n in range(4):
        cache.delete(f"sms:minute:phone:{PHONE}")
        other = make_api(make_customer())
        statuses.append(
            other.post("/api/v1/sms/codes", {"phone": PHONE}, format="json", REMOTE_ADDR=f"10.0.0.{n + 2}").status_code
        )
    assert statuses == [204, 204, 429, 429]
    assert len([m for m in sms() if m["phone"] == f"+86{PHONE}"]) == 3


def test_sms_bad_phone_is_invalid(api, sms):
    answer = api.post("/api/v1/sms/codes", {"phone": "12345"}, format="json")
    assert answer.status_code == 400 and "phone" in answer.json()["detail"]


def test_phone_by_getphonenumber_code(api, customer, wechat):
    code = requests.post(f"{wechat.url}sandbox/phone-codes", json={"phone": "13700001111"}, timeout=5).json()["code"]
    answer = api.post("/api/v1/me/phone", {"code": code}, format="json")
    assert answer.status_code == 200 and answer.json()["phone"] == "13700001111"
    assert Customer.objects.get(pk=customer.pk).phone == "13700001111"
    used = api.post("/api/v1/me/phone", {"code": code}, format="json")  # single-use at WeChat
    assert used.status_code == 400 and used.json()["code"] == "invalid" and "code" in used.json()["detail"]


def test_phone_without_code_or_sms_code_is_invalid(api, wechat):
    answer = api.post("/api/v1/me/phone", {"phone": PHONE}, format="json")
    assert answer.status_code == 400 and "sms_code" in answer.json()["detail"]


def test_sandbox_refuses_a_badly_signed_sms_request(wechat, settings):
    from apps.accounts.sms import SmsSendFailed, TencentSmsBackend

    settings.SMS_TENCENT_ENDPOINT = f"{wechat.url}tencent-sms/"
    settings.SMS_TENCENT_SECRET_KEY = "not-the-key"
    with pytest.raises(SmsSendFailed, match="AuthFailure.SignatureFailure"):
        TencentSmsBackend().send(phone=PHONE, text="x", key="k", template="code", params=("1", 5))


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_two_verifications_of_one_code_one_succeeds(make_customer, sms, race):
    customer = make_customer()
    phones.sms_code_send(customer=customer, phone=PHONE)
    code = _code_of(sms)

    def verify(i):
        return phones.phone_set_by_sms(customer=Customer.objects.get(pk=customer.pk), phone=PHONE, sms_code=code)

    results = race(verify, 2)
    assert sorted(type(r).__name__ for r in results) == ["Customer", "SmsCodeInvalid"]
    row = SmsCode.objects.get()
    assert row.used_at is not None and Customer.objects.get(pk=customer.pk).phone == PHONE


def test_phone_needs_a_token_and_wechat_down_is_503(make_api, api, wechat, settings):
    assert make_api().post("/api/v1/me/phone", {"code": "x"}, format="json").status_code == 401
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    settings.WECHAT_API_BASE = f"http://127.0.0.1:{port}/"  # nothing listens
    answer = api.post("/api/v1/me/phone", {"code": "whatever"}, format="json")
    assert answer.status_code == 503 and answer.json()["code"] == "wechat_unavailable"


def test_sms_provider_outage_is_503_and_the_code_is_dead(api, sms, wechat):
    requests.post(f"{wechat.url}sandbox/sms", json={"down": True}, timeout=5)
    answer = api.post("/api/v1/sms/codes", {"phone": PHONE}, format="json")
    assert answer.status_code == 503 and answer.json()["code"] == "service_unavailable"
    assert SmsCode.objects.get().expires_at <= timezone.now()


def _code_row(customer, code="123456") -> SmsCode:
    """A live code ``code`` for PHONE, as sms_code_send stores it (hash only)."""
    return SmsCode.objects.create(
        customer=customer,
        phone=PHONE,
        code_hash=phones.code_hash(PHONE, code),
        expires_at=timezone.now() + dt.timedelta(minutes=5),
    )


def test_sms_code_allows_the_cap_of_wrong_tries_then_refuses_the_right_code(api, customer, settings):
    settings.SMS_CODE_MAX_ATTEMPTS = 5
    row = _code_row(customer)
    answers = [api.post("/api/v1/me/phone", {"phone": PHONE, "sms_code": "654321"}, format="json") for _ in range(7)]
    assert [a.status_code for a in answers] == [400] * 7
    assert {a.json()["code"] for a in answers} == {"invalid"}
    assert {a.json()["message"] for a in answers} == {"验证码错误或已过期。"}
    assert [a.json()["detail"]["sms_code"] for a in answers] == [["验证码错误或已过期"]] * 5 + [
        ["验证码错误次数过多，请重新获取"]
    ] * 2
    row.refresh_from_db()
    assert (row.attempts, row.used_at) == (5, None)
    right = api.post("/api/v1/me/phone", {"phone": PHONE, "sms_code": "123456"}, format="json")
    assert right.status_code == 400 and right.json()["detail"]["sms_code"] == ["验证码错误次数过多，请重新获取"]
    row.refresh_from_db()
    assert (row.attempts, row.used_at) == (5, None)
    assert Customer.objects.get(pk=customer.pk).phone == ""


def test_sms_code_right_after_fewer_wrong_tries_than_the_cap_is_used(customer, settings):
    settings.SMS_CODE_MAX_ATTEMPTS = 5
    row = _code_row(customer)
    for _ in range(4):
        with pytest.raises(SmsCodeInvalid) as refused:
            phones.phone_set_by_sms(customer=customer, phone=PHONE, sms_code="654321")
        assert type(refused.value) is SmsCodeInvalid
    phones.phone_set_by_sms(customer=customer, phone=PHONE, sms_code="123456")
    row.refresh_from_db()
    assert row.attempts == 5 and row.used_at is not None
    assert Customer.objects.get(pk=customer.pk).phone == PHONE


@pytest.mark.postgres
@pytest.mark.django_db(transaction=True)
def test_sixty_simultaneous_wrong_codes_count_exactly_the_cap(make_customer, race, settings):
    settings.SMS_CODE_MAX_ATTEMPTS = 5
    customer = make_customer()
    row = _code_row(customer)

    def wrong(i):
        return phones.phone_set_by_sms(customer=Customer.objects.get(pk=customer.pk), phone=PHONE, sms_code="654321")

    results = race(wrong, 60)
    kinds = [type(r).__name__ for r in results]
    assert (kinds.count("SmsCodeInvalid"), kinds.count("SmsCodeTooManyTries")) == (5, 55), kinds
    row.refresh_from_db()
    assert row.attempts == 5
    with pytest.raises(SmsCodeTooManyTries):
        phones.phone_set_by_sms(customer=customer, phone=PHONE, sms_code="123456")
    row.refresh_from_db()
    assert (row.attempts, row.used_at) == (5, None) and Customer.objects.get(pk=customer.pk).phone == ""
