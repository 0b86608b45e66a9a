"""Mini-program APIs: jscode2session, cgi-bin/token, subscribe/send (through wechatpy)."""

import pytest
import requests
from wechatpy import WeChatClient
from wechatpy.exceptions import WeChatClientException

from wechat_sandbox import (
    DEMO_APP_SECRET,
    DEMO_APPID,
    SandboxConfig,
    SandboxServer,
)


def make_client(url: str, secret: str = DEMO_APP_SECRET, appid: str = DEMO_APPID):
    """WeChatClient pointed at the sandbox as WECHAT.md describes (three overrides)."""

    class SandboxClient(WeChatClient):
        API_BASE_URL = url + "cgi-bin/"

        def fetch_access_token(self):
            return self._fetch_access_token(
                url=url + "cgi-bin/token",
                params={"grant_type": "client_credential", "appid": self.appid, "secret": self.secret},
            )

    client = SandboxClient(appid, secret)
    client.wxa.API_BASE_URL = url
    return client


def session(url, code, **overrides):
    params = {
        "appid": DEMO_APPID,
        "secret": DEMO_APP_SECRET,
        "js_code": code,
        "grant_type": "authorization_code",
        **overrides,
    }
    return requests.get(url + "sns/jscode2session", params=params, timeout=5).json()


def test_jscode2session_returns_openid_and_session_key(sandbox):
    user = sandbox.control.create_user(unionid="oUnion0000000000000000000001")
    code = sandbox.control.login_code(user["openid"])
    result = make_client(sandbox.url).wxa.code_to_session(code["code"])
    assert result["openid"] == user["openid"] == code["openid"]
    assert result["unionid"] == "oUnion0000000000000000000001"
    assert len(result["session_key"]) == 24
    assert "errcode" not in result


def test_jscode2session_code_is_single_use(sandbox):
    code = sandbox.control.login_code()["code"]
    assert session(sandbox.url, code)["openid"] == sandbox.state.login_codes[code].openid
    again = session(sandbox.url, code)
    assert again["errcode"] == 40163
    assert again["errmsg"].startswith("code been used, rid: ")
    with pytest.raises(WeChatClientException) as exc:
        make_client(sandbox.url).wxa.code_to_session(code)
    assert exc.value.errcode == 40163


def test_jscode2session_unknown_and_expired_codes_are_invalid(sandbox):
    assert session(sandbox.url, "no-such-code")["errcode"] == 40029
    code = sandbox.control.login_code()["code"]
    now = sandbox.state.clock()
    sandbox.state.clock = lambda: now + 301  # codes live 5 minutes
    assert session(sandbox.url, code)["errcode"] == 40029
    assert session(sandbox.url, "")["errcode"] == 41008


def test_jscode2session_checks_appid_secret_and_grant_type(sandbox):
    code = sandbox.control.login_code()["code"]
    assert session(sandbox.url, code, appid="wx0000000000000000")["errcode"] == 40013
    assert session(sandbox.url, code, secret="wrong")["errcode"] == 40125
    assert session(sandbox.url, code, grant_type="client_credential")["errcode"] == 40002
    assert "openid" in session(sandbox.url, code)  # the failed calls did not use the code


def test_jscode2session_blocked_user_40226(sandbox):
    user = sandbox.control.create_user(blocked=True)
    code = sandbox.control.login_code(user["openid"])["code"]
    assert session(sandbox.url, code)["errcode"] == 40226


def test_jscode2session_rate_limit_fault_45011(sandbox):
    sandbox.control.set_faults(jscode2session={"rate_limit": True, "count": 1})
    code = sandbox.control.login_code()["code"]
    assert session(sandbox.url, code)["errcode"] == 45011
    assert "openid" in session(sandbox.url, code)  # not consumed by the limited call


def test_token_and_subscribe_send_records_message(sandbox):
    openid = sandbox.control.create_user()["openid"]
    client = make_client(sandbox.url)
    data = {"thing1": {"value": "订单已发货"}, "amount2": {"value": "199.00"}}
    result = client.wxa.send_subscribe_message(openid, "TPL_SHIPPED", data, page="pages/o?id=1")
    assert result["errcode"] == 0 and result["errmsg"] == "ok"
    messages = sandbox.control.messages()
    assert len(messages) == 1
    assert messages[0]["msgid"] == result["msgid"]
    assert (messages[0]["touser"], messages[0]["template_id"]) == (openid, "TPL_SHIPPED")
    assert messages[0]["data"] == data and messages[0]["page"] == "pages/o?id=1"


def test_token_answers_expires_in_and_rejects_bad_secret(sandbox):
    ok = requests.get(
        sandbox.url + "cgi-bin/token",
        timeout=5,
        params={"grant_type": "client_credential", "appid": DEMO_APPID, "secret": DEMO_APP_SECRET},
    ).json()
    assert ok["expires_in"] == 7200 and sandbox.state.token_status(ok["access_token"]) == "ok"
    bad = requests.get(
        sandbox.url + "cgi-bin/token",
        timeout=5,
        params={"grant_type": "client_credential", "appid": DEMO_APPID, "secret": "x"},
    ).json()
    assert bad["errcode"] == 40125


def send(url, token, body):
    return requests.post(
        url + "cgi-bin/message/subscribe/send", params={"access_token": token}, json=body, timeout=5
    ).json()


def test_subscribe_send_errors():
    config = SandboxConfig(known_templates=frozenset({"TPL_OK"}))
    with SandboxServer(config=config, auto_notify=False) as sandbox:
        token, _ = sandbox.state.issue_access_token()
        ok_user = sandbox.control.create_user()["openid"]
        refusing = sandbox.control.create_user(refuse_messages=True)["openid"]
        good = {"touser": ok_user, "template_id": "TPL_OK", "data": {"thing1": {"value": "x"}}}
        assert send(sandbox.url, "bad-token", good)["errcode"] == 40001
        assert send(sandbox.url, token, {**good, "touser": "oUnknown"})["errcode"] == 40003
        assert send(sandbox.url, token, {**good, "template_id": "TPL_X"})["errcode"] == 40037
        assert send(sandbox.url, token, {**good, "touser": refusing})["errcode"] == 43101
        assert send(sandbox.url, token, {**good, "data": "x"})["errcode"] == 47003
        assert send(sandbox.url, token, good)["errcode"] == 0
        now = sandbox.state.clock()
        sandbox.state.clock = lambda: now + 7201
        assert send(sandbox.url, token, good)["errcode"] == 42001
        assert len(sandbox.state.messages) == 1
