"""The enterprise-WeChat group robot's webhook (robot.py): WeCom's checks and answers, the
recorded messages (GET / DELETE /sandbox/robot-messages), its faults and the 20-a-minute limit."""

import pytest
import requests

from wechat_sandbox import DEMO_ROBOT_KEY, SandboxConfig, SandboxServer


def send(sandbox, body=None, key=DEMO_ROBOT_KEY, **kwargs) -> dict:
    url = f"{sandbox.url}cgi-bin/webhook/send"
    params = {"key": key} if key is not None else {}
    if body is not None:
        kwargs["json"] = body
    return requests.post(url, params=params, timeout=5, **kwargs).json()


def test_robot_accepts_markdown_and_text_and_records_them(sandbox):
    assert send(sandbox, {"msgtype": "markdown", "markdown": {"content": "## 告警\n退款 SM1R1 失败"}}) == {
        "errcode": 0,
        "errmsg": "ok",
    }
    assert send(sandbox, {"msgtype": "text", "text": {"content": "对账有差异", "mentioned_mobile_list": ["@all"]}}) == {
        "errcode": 0,
        "errmsg": "ok",
    }
    messages = sandbox.control.robot_messages()
    assert [(m["id"], m["key"], m["msgtype"], m["content"]) for m in messages] == [
        (1, DEMO_ROBOT_KEY, "markdown", "## 告警\n退款 SM1R1 失败"),
        (2, DEMO_ROBOT_KEY, "text", "对账有差异"),
    ]
    assert messages[1]["mentioned_mobile_list"] == ["@all"] and messages[0]["sent_at"].endswith("+08:00")
    assert sandbox.control.robot_messages(key="other") == []
    assert sandbox.control.clear_robot_messages() == []
    assert sandbox.control.robot_messages() == []


@pytest.mark.parametrize(
    ("key", "body", "errcode", "errmsg"),
    [
        (None, {"msgtype": "text", "text": {"content": "x"}}, 93000, "invalid webhook url"),
        ("not-the-key", {"msgtype": "text", "text": {"content": "x"}}, 93000, "invalid webhook url"),
        (DEMO_ROBOT_KEY, {"msgtype": "card", "card": {"content": "x"}}, 40008, "invalid message type"),
        (DEMO_ROBOT_KEY, {"text": {"content": "x"}}, 40008, "invalid message type"),
        (DEMO_ROBOT_KEY, {"msgtype": "text", "text": {"content": ""}}, 44004, "empty content"),
        (DEMO_ROBOT_KEY, {"msgtype": "markdown", "text": {"content": "x"}}, 44004, "empty content"),
        (
            DEMO_ROBOT_KEY,
            {"msgtype": "text", "text": {"content": "字" * 683}},
            40058,
            "text.content exceed max length 2048. invalid Request Parameter",
        ),
        (
            DEMO_ROBOT_KEY,
            {"msgtype": "markdown", "markdown": {"content": "a" * 4097}},
            40058,
            "markdown.content exceed max length 4096. invalid Request Parameter",
        ),
        (DEMO_ROBOT_KEY, ["not", "an", "object"], 47001, "data format error"),
    ],
)
def test_robot_refuses_as_wecom_does(sandbox, key, body, errcode, errmsg):
    answer = send(sandbox, body, key=key)
    assert answer["errcode"] == errcode
    assert answer["errmsg"].startswith(f"{errmsg}, hint: [")
    assert answer["errmsg"].endswith(f"more info at https://open.work.weixin.qq.com/devtool/query?e={errcode}")
    assert sandbox.control.robot_messages() == []


def test_robot_content_at_the_limit_is_accepted(sandbox):
    assert send(sandbox, {"msgtype": "text", "text": {"content": "字" * 682}})["errcode"] == 0  # 2046 bytes
    assert send(sandbox, {"msgtype": "markdown", "markdown": {"content": "a" * 4096}})["errcode"] == 0


def test_robot_refuses_get_and_bad_json(sandbox):
    url = f"{sandbox.url}cgi-bin/webhook/send"
    assert requests.get(url, params={"key": DEMO_ROBOT_KEY}, timeout=5).json()["errcode"] == 43002
    assert requests.get(url, params={"key": "wrong"}, timeout=5).json()["errcode"] == 93000  # the key first
    answer = requests.post(url, params={"key": DEMO_ROBOT_KEY}, data=b"{not json", timeout=5).json()
    assert answer["errcode"] == 47001


def test_robot_sends_at_most_its_per_minute_limit(sandbox):
    sandbox.state.config.robot_per_minute = 2
    body = {"msgtype": "text", "text": {"content": "x"}}
    assert [send(sandbox, body)["errcode"] for _ in range(3)] == [0, 0, 45009]
    assert len(sandbox.control.robot_messages()) == 2
    assert SandboxConfig().robot_per_minute == 20  # WeCom's limit by default


def test_robot_faults(sandbox):
    sandbox.control.set_faults({"robot": {"system_error": True, "count": 1}})
    body = {"msgtype": "text", "text": {"content": "x"}}
    assert send(sandbox, body)["errcode"] == -1
    sandbox.control.set_faults({"cgi-bin/webhook/send": {"rate_limit": True, "count": 1}})
    assert send(sandbox, body)["errcode"] == 45009
    assert send(sandbox, body) == {"errcode": 0, "errmsg": "ok"}
    assert len(sandbox.control.robot_messages()) == 1
    assert sandbox.state.api_calls["cgi-bin/webhook/send"] == 3


def test_robot_key_from_the_environment():
    config = SandboxConfig.from_env({"SANDBOX_ROBOT_KEY": "11111111-2222-3333-4444-555555555555"})
    with SandboxServer(config=config, auto_notify=False) as server:
        assert send(server, {"msgtype": "text", "text": {"content": "x"}}, key=DEMO_ROBOT_KEY)["errcode"] == 93000
        assert (
            send(server, {"msgtype": "text", "text": {"content": "x"}}, key="11111111-2222-3333-4444-555555555555")[
                "errcode"
            ]
            == 0
        )
    with pytest.raises(ValueError, match="robot_key"):
        SandboxConfig(robot_key="").validate()
