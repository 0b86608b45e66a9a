"""Alerts: recorded once per problem, sent after commit to every backend (the sandbox's group
robot, mail, the log), retried from the row when a backend or Redis fails."""

from __future__ import annotations

import datetime as dt
import logging

import pytest
from django.core import mail
from django.db import transaction
from django.utils import timezone

from apps.alerts import services
from apps.alerts.models import Alert, AlertDelivery
from starmall import dispatch

pytestmark = pytest.mark.django_db

WECOM = "apps.alerts.backends.WeComRobotBackend"
EMAIL = "apps.alerts.backends.EmailBackend"
LOG = "apps.alerts.backends.LogBackend"


def raise_refund_alert(no: str = "SM1R1") -> bool:
    return services.alert_raise(
        key=f"refund:{no}:failed",
        kind=Alert.Kind.REFUND_FAILED,
        title=f"退款 {no} 失败",
        text=f"退款 {no}（12.00 元）尝试 3 次后失败。",
    )


def test_alert_raise_inserts_once_and_queues_one_send_after_commit(
    django_capture_on_commit_callbacks, queued, run_queued_alerts, wechat
):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert raise_refund_alert() is True
        assert raise_refund_alert() is False  # the same problem again: nothing changes
    assert len(callbacks) == 1
    assert queued("default") == ["apps.alerts.tasks.alert_send"]
    alert = Alert.objects.get()
    assert (alert.key, alert.kind, alert.status, alert.attempts) == (
        "refund:SM1R1:failed",
        "refund_failed",
        "pending",
        0,
    )

    assert run_queued_alerts() == ["sent"]
    alert.refresh_from_db()
    assert (alert.status, alert.attempts, alert.last_error) == ("sent", 1, "")
    assert alert.sent_at is not None and alert.next_attempt_at is None
    assert sorted(AlertDelivery.objects.filter(delivered_at__isnull=False).values_list("backend", flat=True)) == sorted(
        [LOG, WECOM, EMAIL]
    )
    robot = wechat.control.robot_messages()
    assert len(robot) == 1 and robot[0]["msgtype"] == "markdown"
    assert "退款 SM1R1 失败" in robot[0]["content"] and "refund:SM1R1:failed" in robot[0]["content"]
    assert len(mail.outbox) == 1

    assert services.alert_deliver(alert_id=alert.pk) == "sent"  # the task delivered twice: no effect
    assert len(wechat.control.robot_messages()) == 1 and len(mail.outbox) == 1


def test_alert_rolled_back_is_neither_kept_nor_sent(django_capture_on_commit_callbacks, queued, send_alerts, wechat):
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        with pytest.raises(RuntimeError), transaction.atomic():
            raise_refund_alert()
            raise RuntimeError("the state change failed")
    assert callbacks == [] and Alert.objects.count() == 0
    assert queued("default") == []
    assert send_alerts() == {}
    assert wechat.control.robot_messages() == [] and mail.outbox == []


def test_alert_survives_redis_down_at_commit_and_the_sweep_sends_it(
    django_capture_on_commit_callbacks, queued, wechat, monkeypatch
):
    monkeypatch.setattr(dispatch, "_paused_until", float("inf"))  # as after a failed push: Redis down
    with django_capture_on_commit_callbacks(execute=True):
        raise_refund_alert()
    assert queued("default") == []
    now = timezone.now()
    assert services.alerts_sweep(now=now) == {}  # its task may still come: the sweep waits a minute
    assert services.alerts_sweep(now=now + dt.timedelta(seconds=61)) == {"sent": 1}
    assert services.alerts_sweep(now=now + dt.timedelta(seconds=200)) == {}
    assert len(wechat.control.robot_messages()) == 1 and len(mail.outbox) == 1


def test_robot_answering_an_error_is_recorded_retried_by_the_sweep_and_sent_once(wechat):
    raise_refund_alert()
    alert = Alert.objects.get()
    wechat.control.set_faults({"robot": {"system_error": True, "count": 1}})
    now = timezone.now()
    assert services.alert_deliver(alert_id=alert.pk, now=now) == "pending"
    alert.refresh_from_db()
    assert alert.attempts == 1 and alert.next_attempt_at == now + dt.timedelta(seconds=60)
    assert "errcode -1: system error" in alert.last_error
    robot_row = AlertDelivery.objects.get(alert=alert, backend=WECOM)
    assert (robot_row.delivered_at, robot_row.attempts) == (None, 1)
    assert "errcode -1" in robot_row.last_error
    assert AlertDelivery.objects.get(alert=alert, backend=EMAIL).delivered_at is not None
    assert len(mail.outbox) == 1 and wechat.control.robot_messages() == []

    assert services.alerts_sweep(now=now + dt.timedelta(seconds=30)) == {}  # back-off not over
    assert services.alerts_sweep(now=now + dt.timedelta(seconds=61)) == {"sent": 1}
    alert.refresh_from_db()
    assert (alert.status, alert.attempts) == ("sent", 2)
    assert AlertDelivery.objects.get(alert=alert, backend=WECOM).attempts == 2
    assert len(wechat.control.robot_messages()) == 1
    assert len(mail.outbox) == 1  # the mail went the first time and is not sent again


def test_robot_unreachable_is_recorded_without_its_key_then_delivered(wechat, settings):
    good = settings.ALERT_WECOM_WEBHOOK_URL
    settings.ALERT_WECOM_WEBHOOK_URL = "http://127.0.0.1:9/cgi-bin/webhook/send?key=secret-robot-key"
    raise_refund_alert()
    alert = Alert.objects.get()
    now = timezone.now()
    assert services.alert_deliver(alert_id=alert.pk, now=now) == "pending"
    error = AlertDelivery.objects.get(alert=alert, backend=WECOM).last_error
    assert error.startswith("AlertSendError: ConnectionError") and "secret-robot-key" not in error
    assert "key=***" in error
    settings.ALERT_WECOM_WEBHOOK_URL = good
    assert services.alerts_sweep(now=now + dt.timedelta(seconds=61)) == {"sent": 1}
    assert [m["content"].count("退款 SM1R1 失败") for m in wechat.control.robot_messages()] == [1]


def test_robot_with_a_wrong_key_fails_until_max_attempts_then_failed(wechat, settings):
    settings.ALERT_BACKENDS = [WECOM]
    settings.ALERT_WECOM_WEBHOOK_URL = f"{wechat.url}cgi-bin/webhook/send?key=not-the-robot"
    raise_refund_alert()
    alert = Alert.objects.get()
    now = timezone.now()
    statuses = []
    for attempt in range(services.MAX_ATTEMPTS):
        statuses.append(services.alert_deliver(alert_id=alert.pk, now=now))
        alert.refresh_from_db()
        if attempt < services.MAX_ATTEMPTS - 1:
            assert alert.next_attempt_at == now + dt.timedelta(seconds=services.BACKOFF_SECONDS[attempt])
            now = alert.next_attempt_at
    assert statuses == ["pending"] * (services.MAX_ATTEMPTS - 1) + ["failed"]
    assert (alert.status, alert.attempts, alert.next_attempt_at) == ("failed", services.MAX_ATTEMPTS, None)
    assert "errcode 93000: invalid webhook url" in alert.last_error
    assert services.alerts_sweep(now=now + dt.timedelta(days=1)) == {}
    assert wechat.control.robot_messages() == []


def test_robot_sends_at_most_20_a_minute_and_holds_back_the_rest(wechat, settings):
    settings.ALERT_BACKENDS = [WECOM]
    wechat.state.config.robot_per_minute = 100  # our own limit is the one under test
    for n in range(21):
        raise_refund_alert(f"SM{n}R1")
    now = timezone.now()
    statuses = [
        services.alert_deliver(alert_id=pk, now=now) for pk in Alert.objects.order_by("pk").values_list("pk", flat=True)
    ]
    assert statuses == ["sent"] * 20 + ["pending"]
    held = Alert.objects.get(key="refund:SM20R1:failed")
    assert (held.attempts, held.next_attempt_at) == (0, now + dt.timedelta(minutes=1))  # not a failed attempt
    assert "每分钟最多发送 20 条" in held.last_error
    assert AlertDelivery.objects.get(alert=held).attempts == 0
    assert len(wechat.control.robot_messages()) == 20
    assert services.alerts_sweep(now=now + dt.timedelta(minutes=3)) == {"sent": 1}
    assert len(wechat.control.robot_messages()) == 21


def test_robot_text_message_and_long_alerts_are_cut_to_wecoms_limits(wechat, settings):
    settings.ALERT_BACKENDS = [WECOM]
    settings.ALERT_WECOM_MSGTYPE = "text"
    services.alert_raise(
        key="reconciliation:2026-12-01:differences",
        kind=Alert.Kind.RECONCILIATION,
        title="2026-12-01 对账有 400 笔差异",
        text="差异：" + "SM20261201000001、" * 400,
    )
    assert services.alert_deliver(alert_id=Alert.objects.get().pk) == "sent"
    [message] = wechat.control.robot_messages()
    assert message["msgtype"] == "text" and message["content"].startswith(
        "【星商城 告警】2026-12-01 对账有 400 笔差异\n"
    )
    assert 2000 < len(message["content"].encode()) <= 2048 and message["content"].endswith("…")


def test_email_backend_sends_one_mail_to_alert_emails(settings):
    settings.ALERT_BACKENDS = [EMAIL]
    settings.ALERT_EMAILS = ["finance@example.com", "ops@example.com"]
    raise_refund_alert()
    alert = Alert.objects.get()
    assert services.alert_deliver(alert_id=alert.pk) == "sent"
    assert services.alert_deliver(alert_id=alert.pk) == "sent"
    [sent] = mail.outbox
    assert sent.subject == "【星商城 告警】退款 SM1R1 失败"
    assert sent.to == ["finance@example.com", "ops@example.com"]
    assert sent.body.startswith("退款 SM1R1（12.00 元）尝试 3 次后失败。\n\n类型：退款失败\n时间：")
    assert "告警键：refund:SM1R1:failed" in sent.body


def test_email_backend_without_recipients_is_an_error_not_a_crash(settings):
    settings.ALERT_BACKENDS = [EMAIL]
    settings.ALERT_EMAILS = []
    raise_refund_alert()
    assert services.alert_deliver(alert_id=Alert.objects.get().pk) == "pending"
    assert AlertDelivery.objects.get().last_error == "AlertSendError: ALERT_EMAILS 未设置"
    assert mail.outbox == []


def test_log_backend_writes_one_error_line(settings, caplog):
    settings.ALERT_BACKENDS = [LOG]
    raise_refund_alert()
    with caplog.at_level(logging.ERROR, logger="apps.alerts.backends"):
        assert services.alert_deliver(alert_id=Alert.objects.get().pk) == "sent"
    assert [r.getMessage() for r in caplog.records if r.name == "apps.alerts.backends"] == [
        "ALERT sent refund:SM1R1:failed [退款失败] 退款 SM1R1 失败: 退款 SM1R1（12.00 元）尝试 3 次后失败。"
    ]


def test_a_claimed_alert_is_not_sent_by_a_second_worker_until_its_lease_expires(wechat):
    raise_refund_alert()
    alert = Alert.objects.get()
    now = timezone.now()
    Alert.objects.filter(pk=alert.pk).update(
        locked_until=now + services.LEASE, attempts=1, next_attempt_at=now
    )  # a worker claimed it and died
    assert services.alert_deliver(alert_id=alert.pk, now=now) == "pending"
    assert wechat.control.robot_messages() == []
    assert services.alerts_sweep(now=now + services.LEASE + dt.timedelta(seconds=1)) == {"sent": 1}
    assert len(wechat.control.robot_messages()) == 1


def test_resolve_marks_handled_once():
    raise_refund_alert()
    alert = Alert.objects.get()
    assert services.alert_resolve(alert_id=alert.pk, actor="staff:wang") is True
    assert services.alert_resolve(alert_id=alert.pk, actor="staff:li") is False
    alert.refresh_from_db()
    assert alert.resolved_by == "staff:wang" and alert.resolved_at is not None


def test_the_problem_coming_back_after_staff_handled_it_reopens_and_sends_again(
    django_capture_on_commit_callbacks, run_queued_alerts, wechat
):
    """A refund failing again after staff marked its alert handled (and retried) must reach
    someone again: the alert reopens, unhandled, and every backend sends it once more."""
    with django_capture_on_commit_callbacks(execute=True):
        raise_refund_alert()
    assert run_queued_alerts() == ["sent"]
    alert = Alert.objects.get()
    assert services.alert_resolve(alert_id=alert.pk, actor="staff:wang")
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        assert (
            services.alert_raise(
                key="refund:SM1R1:failed",
                kind=Alert.Kind.REFUND_FAILED,
                title="退款 SM1R1 再次失败",
                text="重试后仍失败。",
            )
            is True
        )
        assert raise_refund_alert() is False  # open again: a third raise adds nothing
    assert len(callbacks) == 1
    alert.refresh_from_db()
    assert (alert.resolved_at, alert.resolved_by, alert.status, alert.attempts, alert.title) == (
        None,
        "",
        "pending",
        0,
        "退款 SM1R1 再次失败",
    )
    assert run_queued_alerts() == ["sent"]
    robot = wechat.control.robot_messages()
    assert len(robot) == 2 and "再次失败" in robot[1]["content"]
    assert Alert.objects.count() == 1


def test_a_long_sweep_claims_each_alert_from_the_moment_it_takes_it(wechat, monkeypatch):
    """The lease runs from the claim, not from the sweep's start: an alert taken late in a slow
    sweep is not free for the next minute's sweep while it is being sent."""
    raise_refund_alert()
    alert = Alert.objects.get()
    started = timezone.now() - dt.timedelta(minutes=10)  # this sweep began 10 minutes ago
    Alert.objects.filter(pk=alert.pk).update(next_attempt_at=started)
    real_send = services.backends.configured

    def slow_configured():  # while it sends, look at what another worker would see
        free = Alert.objects.get(pk=alert.pk).locked_until > timezone.now() + dt.timedelta(minutes=4)
        seen.append(free)
        return real_send()

    seen = []
    monkeypatch.setattr(services.backends, "configured", slow_configured)
    assert services.alert_deliver(alert_id=alert.pk, now=started) == "sent"
    assert seen == [True]
    assert len(wechat.control.robot_messages()) == 1


def test_alert_on_failure_raises_the_alert_only_when_its_change_moved_a_row(django_capture_on_commit_callbacks):
    built = []

    def alert() -> dict[str, str]:
        built.append(1)
        return {
            "key": "refund:SM1R9:failed",
            "kind": Alert.Kind.REFUND_FAILED,
            "title": "退款 SM1R9 失败",
            "text": "退款 SM1R9（5.00 元）尝试 3 次后失败。",
        }

    with django_capture_on_commit_callbacks(execute=False):
        assert services.alert_on_failure(lambda: 0, alert) is False  # another worker moved it first
        assert (built, Alert.objects.count()) == ([], 0)
        assert services.alert_on_failure(lambda: 1, None) is True  # a retry: no alert
        assert Alert.objects.count() == 0
        assert services.alert_on_failure(lambda: 1, alert) is True
    assert built == [1]
    assert list(Alert.objects.values_list("key", "kind", "title")) == [
        ("refund:SM1R9:failed", "refund_failed", "退款 SM1R9 失败")
    ]


def test_alert_on_failure_rolls_the_change_back_with_a_failing_alert():
    raise_refund_alert("SM1R8")
    alert_id = Alert.objects.get().pk

    def mark() -> int:
        return Alert.objects.filter(pk=alert_id).update(title="改过")

    def broken_alert() -> dict[str, str]:
        raise RuntimeError("alert text could not be built")

    with pytest.raises(RuntimeError):
        services.alert_on_failure(mark, broken_alert)
    assert Alert.objects.get(pk=alert_id).title == "退款 SM1R8 失败"  # the change and its alert go together


@pytest.mark.django_db(transaction=True)  # real commits: what a killed worker leaves is what committed
def test_robot_delivery_is_recorded_when_the_worker_dies_right_after_the_robot_answered(
    wechat, settings, die_after_answer
):
    settings.ALERT_BACKENDS = [WECOM, EMAIL]
    raise_refund_alert()
    alert = Alert.objects.get()
    with die_after_answer(lambda: len(wechat.state.robot_messages) > 0) as death:
        services.alert_deliver(alert_id=alert.pk)
    assert death.killed and mail.outbox == []  # died before the mail
    later = timezone.now() + services.LEASE + dt.timedelta(seconds=1)  # the dead worker's lease is over
    assert services.alerts_sweep(now=later) == {"sent": 1}
    assert len(wechat.control.robot_messages()) == 1 and len(mail.outbox) == 1
    assert list(AlertDelivery.objects.filter(alert=alert).values_list("backend", "attempts").order_by("backend")) == [
        (EMAIL, 1),
        (WECOM, 1),
    ]
