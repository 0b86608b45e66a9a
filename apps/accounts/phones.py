"""A customer's phone number: from the mini-program's getPhoneNumber code, or verified by an SMS code.

SMS codes (``POST /api/v1/sms/codes``): six digits, of which an :class:`SmsCode` row stores only the
HMAC-SHA256 (keyed by ``SECRET_KEY``, over phone and code). A code lives ``SMS_CODE_TTL_SECONDS``
(5 minutes), is compared in constant time, checked at most ``SMS_CODE_MAX_ATTEMPTS`` times in all
and used once, also under races (conditional UPDATEs of ``attempts`` below the cap and of
``used_at``). Throttles, counted in Redis so every process sees them: one code a minute and
``SMS_CODES_PER_DAY`` a Shanghai day, per phone and per client address -> SmsThrottled (429
``throttled``).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import hmac
import logging
import secrets

from django.conf import settings
from django.core.cache import cache
from django.db import transaction
from django.db.models import F
from django.utils import timezone

from apps.accounts.exceptions import SmsCodeInvalid, SmsCodeTooManyTries, SmsThrottled
from apps.accounts.models import Customer, SmsCode
from starmall.errors import ServiceUnavailable

logger = logging.getLogger(__name__)


class SmsUnavailable(ServiceUnavailable):
    """The SMS provider did not take the code (503 ``service_unavailable``): ask again later."""

    message = "短信暂时无法发送，请稍后再试。"


def code_hash(phone: str, code: str) -> str:
    """HMAC-SHA256 (key ``SECRET_KEY``) of ``phone:code``, hex: what is stored of a code."""
    return hmac.new(settings.SECRET_KEY.encode(), f"{phone}:{code}".encode(), hashlib.sha256).hexdigest()


def _throttle(*, phone: str, client_ip: str, now: dt.datetime) -> None:
    """One a minute per phone and per address, SMS_CODES_PER_DAY a Shanghai day per phone and
    per address (atomic Redis ADD / INCR); raises SmsThrottled."""
    subjects = [f"phone:{phone}"] + ([f"ip:{client_ip}"] if client_ip else [])
    taken = []
    for subject in subjects:
        key = f"sms:minute:{subject}"
        if not cache.add(key, 1, timeout=60):
            for other in taken:  # the refused request does not hold the other subject's minute
                cache.delete(other)
            raise SmsThrottled(retry_after_seconds=60)
        taken.append(key)
    day = timezone.localtime(now).strftime("%Y%m%d")
    for subject in subjects:
        key = f"sms:day:{day}:{subject}"
        cache.add(key, 0, timeout=2 * 86400)
        if cache.incr(key) > settings.SMS_CODES_PER_DAY:
            raise SmsThrottled("今日验证码发送次数已达上限，请明天再试。")


def sms_code_send(*, customer: Customer, phone: str, client_ip: str = "", now: dt.datetime | None = None) -> SmsCode:
    """Send a new verification code to ``phone`` for ``customer``; returns its row.

    Throttled first (module docstring: SmsThrottled); the row (hash only) is committed before
    the provider is called, outside any transaction, and the code reaches only the SMS.
    Raises SmsUnavailable when the provider fails (the row is then expired at once).
    """
    from apps.accounts.sms import backend

    now = now or timezone.now()
    _throttle(phone=phone, client_ip=client_ip, now=now)
    code = f"{secrets.randbelow(10**6):06d}"
    ttl = settings.SMS_CODE_TTL_SECONDS
    row = SmsCode.objects.create(
        customer=customer,
        phone=phone,
        code_hash=code_hash(phone, code),
        client_ip=client_ip[:45],
        created_at=now,
        expires_at=now + dt.timedelta(seconds=ttl),
    )
    try:
        backend().send(
            phone=phone,
            key=f"smscode:{row.pk}",
            template="code",
            params=(code, ttl // 60),
            text=f"【{settings.SMS_SIGN_NAME}】您的验证码是{code}，{ttl // 60}分钟内有效。请勿泄露给他人。",
        )
    except Exception as exc:  # noqa: BLE001 - any provider failure: the code was never delivered
        logger.warning("SMS code to %s failed: %s", phone, exc)
        SmsCode.objects.filter(pk=row.pk).update(expires_at=now)
        raise SmsUnavailable() from exc
    return row


def _live_code(*, customer_id: int, phone: str, code: str, now: dt.datetime) -> SmsCode:
    """The customer's newest live code for ``phone`` if ``code`` matches it (constant-time
    comparison). Raises SmsCodeInvalid (none live, or wrong: the try counted) or
    SmsCodeTooManyTries (the cap reached, even for the right code)."""
    row = (
        SmsCode.objects.filter(customer_id=customer_id, phone=phone, used_at__isnull=True, expires_at__gt=now)
        .order_by("-created_at", "-pk")
        .first()
    )
    if row is None:
        raise SmsCodeInvalid()
    if row.attempts >= settings.SMS_CODE_MAX_ATTEMPTS:
        raise SmsCodeTooManyTries()
    if not hmac.compare_digest(row.code_hash, code_hash(phone, str(code))):
        if not _try_counted(SmsCode.objects.filter(pk=row.pk)):
            raise SmsCodeTooManyTries()
        raise SmsCodeInvalid()
    return row


def _try_counted(codes, **changes) -> bool:
    """Count one check of the code in ``codes`` (with ``changes``, e.g. ``used_at``) by one
    conditional UPDATE ``attempts = attempts + 1 ... AND attempts < SMS_CODE_MAX_ATTEMPTS``; True
    if it was counted. The row count decides, so no number of simultaneous checks passes the cap
    (API.md "Corrections"). A wrong code's count is its own statement (autocommit: the refusal
    that follows does not roll it back)."""
    return codes.filter(attempts__lt=settings.SMS_CODE_MAX_ATTEMPTS).update(attempts=F("attempts") + 1, **changes) == 1


def phone_set_by_sms(*, customer: Customer, phone: str, sms_code: str, now: dt.datetime | None = None) -> Customer:
    """Set the customer's phone after checking ``sms_code``; the code is used (conditional
    UPDATE of ``used_at`` under the try cap: one winner between simultaneous verifications, none
    once ``SMS_CODE_MAX_ATTEMPTS`` tries were counted) in the same transaction that stores the
    phone. Raises SmsCodeInvalid (wrong, expired, used) or SmsCodeTooManyTries."""
    now = now or timezone.now()
    row = _live_code(customer_id=customer.pk, phone=phone, code=sms_code, now=now)
    with transaction.atomic():
        live = SmsCode.objects.filter(pk=row.pk, used_at__isnull=True, expires_at__gt=now)
        if not _try_counted(live, used_at=now):
            raise SmsCodeInvalid() if not live.exists() else SmsCodeTooManyTries()
        Customer.objects.filter(pk=customer.pk).update(phone=phone)
    customer.phone = phone
    return customer


def phone_set_by_wechat_code(*, customer: Customer, code: str) -> Customer:
    """Set the customer's phone to the number WeChat gives for a getPhoneNumber ``code``.
    Raises PhoneCodeInvalid (400) or WechatUnavailable (503)."""
    from apps.accounts import wechat

    phone = wechat.phone_number(code)
    Customer.objects.filter(pk=customer.pk).update(phone=phone)
    customer.phone = phone
    return customer
