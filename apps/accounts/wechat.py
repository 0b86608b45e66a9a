"""The one place that talks to WeChat's mini-program APIs (login, subscription messages, phone numbers).

wechatpy's ``WeChatClient`` has WeChat's hosts built in; we point its base URLs at
``settings.WECHAT_API_BASE`` (the local sandbox by default, ``https://api.weixin.qq.com/`` in
production) as WECHAT.md describes. The access token is kept in Redis so every process shares
one (WeChat invalidates the previous token when a new one is fetched).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

import requests
from django.conf import settings
from wechatpy import WeChatClient
from wechatpy.exceptions import WeChatClientException
from wechatpy.session.redisstorage import RedisStorage

from apps.accounts.exceptions import LoginCodeInvalid, LoginThrottled, PhoneCodeInvalid
from starmall import cache_client
from starmall.errors import WechatUnavailable

logger = logging.getLogger(__name__)

# code2session error codes (WECHAT.md, "Mini-program login").
_BAD_CODE = (40029, 40163, 40226)  # invalid, already used, blocked user
_RATE_LIMIT = 45011


class _Client(WeChatClient):
    """WeChatClient whose token URL follows ``WECHAT_API_BASE`` too."""

    def fetch_access_token(self):
        return self._fetch_access_token(
            url=settings.WECHAT_API_BASE + "cgi-bin/token",
            params={"grant_type": "client_credential", "appid": self.appid, "secret": self.secret},
        )


def client() -> WeChatClient:
    """A client bound to the configured base URL, with the access token stored in Redis."""
    session = RedisStorage(cache_client.redis_client(), prefix="wechatpy")
    c = _Client(
        settings.WECHAT_APPID,
        settings.WECHAT_APP_SECRET,
        session=session,
        timeout=settings.WECHAT_TIMEOUT_SECONDS,
    )
    c.API_BASE_URL = settings.WECHAT_API_BASE + "cgi-bin/"
    c.wxa.API_BASE_URL = settings.WECHAT_API_BASE
    return c


@dataclass(frozen=True)
class WechatSession:
    """What code2session returns: ``openid`` (per appid), ``unionid`` (may be empty)."""

    openid: str
    unionid: str
    session_key: str


def code_to_session(code: str) -> WechatSession:
    """Exchange a ``wx.login`` code for the user's openid (``sns/jscode2session``).

    Raises LoginCodeInvalid (40029 invalid, 40163 used, 40226 blocked), LoginThrottled
    (45011) or WechatUnavailable (network error, timeout, any other WeChat error).
    """
    try:
        data = client().wxa.code_to_session(code)
    except WeChatClientException as exc:
        errcode = int(exc.errcode or 0)
        if errcode in _BAD_CODE:
            raise LoginCodeInvalid(wechat_errcode=errcode) from exc
        if errcode == _RATE_LIMIT:
            raise LoginThrottled(wechat_errcode=errcode) from exc
        logger.warning("code2session failed: %s", exc)
        raise WechatUnavailable("微信登录暂时不可用，请稍后再试。", wechat_errcode=errcode) from exc
    except requests.RequestException as exc:
        logger.warning("code2session unreachable: %s", exc)
        raise WechatUnavailable("微信暂时无法连接，请稍后再试。") from exc
    return WechatSession(
        openid=data["openid"], unionid=data.get("unionid", ""), session_key=data.get("session_key", "")
    )


_REFUSED = 43101  # the user has no subscription (left) for this template


class SubscribeRefused(Exception):
    """WeChat refused a subscription message: the user did not subscribe (errcode 43101)."""


def send_subscribe_message(*, openid: str, template_id: str, data: dict, page: str = "") -> dict:
    """Send a subscription message (``cgi-bin/message/subscribe/send``).

    ``data`` is WeChat's shape: ``{"thing1": {"value": "..."}}``. Returns WeChat's answer.
    Raises :class:`SubscribeRefused` (43101: the user did not subscribe; sending again will not
    help), ``WeChatClientException`` (40003 bad openid, 40037 bad template, ...) or
    ``requests.RequestException``: the follow-up handler decides what to retry.
    """
    try:
        return client().wxa.send_subscribe_message(openid, template_id, data, page=page or None)
    except WeChatClientException as exc:
        if int(exc.errcode or 0) == _REFUSED:
            raise SubscribeRefused(str(exc)) from exc
        raise


def phone_number(code: str) -> str:
    """The phone number the user shared with the mini-program's getPhoneNumber button
    (``wxa/business/getuserphonenumber``, ``code`` single-use, 5 minutes): ``purePhoneNumber``
    (no country code) for mainland numbers, else ``+<countryCode> <purePhoneNumber>``.

    Raises PhoneCodeInvalid (40029 invalid or expired, 40163 used) or WechatUnavailable.
    """
    try:
        data = client().wxa._post("wxa/business/getuserphonenumber", data={"code": code})
    except WeChatClientException as exc:
        errcode = int(exc.errcode or 0)
        if errcode in (40029, 40163):
            raise PhoneCodeInvalid(wechat_errcode=errcode) from exc
        logger.warning("getuserphonenumber failed: %s", exc)
        raise WechatUnavailable(wechat_errcode=errcode) from exc
    except requests.RequestException as exc:
        logger.warning("getuserphonenumber unreachable: %s", exc)
        raise WechatUnavailable() from exc
    info = data.get("phone_info") or {}
    pure, country = str(info.get("purePhoneNumber") or ""), str(info.get("countryCode") or "86")
    if not pure:
        raise WechatUnavailable("微信未返回手机号，请稍后再试。")
    return pure if country == "86" else f"+{country} {pure}"


def shipping_info_upload(body: dict) -> dict:
    """Report how a paid order is delivered (``wxa/sec/order/upload_shipping_info``, WECHAT.md
    "Shipping information"); ``body`` is WeChat's JSON as is. Returns WeChat's answer
    (errcode 0). Raises ``WeChatClientException`` (``errcode``: 10060001 no such payment,
    10060003 not paid, 10060012 express company, 10060014 / 10060019 parameters, -1 busy) or
    ``requests.RequestException``: the follow-up decides what to retry. The access token is
    refreshed and the call repeated once by wechatpy on 40001 / 42001."""
    return client().wxa._post("wxa/sec/order/upload_shipping_info", data=body)


def msg_jump_path_set(path: str) -> dict:
    """Where the buyer's "confirm receipt" message opens (``wxa/sec/order/set_msg_jump_path``,
    ``{"path"}``). Raises as :func:`shipping_info_upload`."""
    return client().wxa._post("wxa/sec/order/set_msg_jump_path", data={"path": path})
