"""Admin login lockout (django-axes): keyed by username + the real client address."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model
from django.test import Client, override_settings

from starmall.api.middleware import client_ip

PASSWORD = "correct-horse-battery"


@pytest.fixture
def staff(db):
    return get_user_model().objects.create_superuser(username="boss", email="", password=PASSWORD)


def login(client: Client, password: str, *, ip: str = "203.0.113.7", forwarded_for: str | None = None):
    extra = {"REMOTE_ADDR": ip}
    if forwarded_for:
        extra["HTTP_X_FORWARDED_FOR"] = forwarded_for
    return client.post("/admin/login/?next=/admin/", {"username": "boss", "password": password}, **extra)


def logged_in(client: Client) -> bool:
    return "_auth_user_id" in client.session


@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3)
def test_wrong_passwords_lock_the_login_and_the_right_one_is_then_refused(staff):
    from axes.models import AccessAttempt

    client = Client()
    for _ in range(3):
        response = login(client, "wrong")
        assert not logged_in(client)
    assert AccessAttempt.objects.get(username="boss", ip_address="203.0.113.7").failures_since_start == 3

    response = login(client, PASSWORD)
    assert response.status_code == 429
    assert not logged_in(client)
    # A forged X-Forwarded-For (no trusted proxy) does not make a new address.
    response = login(Client(), PASSWORD, forwarded_for="198.51.100.1")
    assert response.status_code == 429

    # Keyed by username + address: the same staff member from another address still gets in.
    other = Client()
    response = login(other, PASSWORD, ip="192.0.2.50")
    assert response.status_code == 302 and logged_in(other)


@override_settings(AXES_ENABLED=True, AXES_FAILURE_LIMIT=3)
def test_fewer_failures_than_the_limit_do_not_lock(staff):
    client = Client()
    for _ in range(2):
        login(client, "wrong")
    response = login(client, PASSWORD)
    assert response.status_code == 302 and logged_in(client)


def test_client_ip_trusts_forwarded_for_only_behind_trusted_proxies(rf, settings):
    request = rf.get("/", REMOTE_ADDR="10.0.0.2", HTTP_X_FORWARDED_FOR="6.6.6.6, 203.0.113.7")
    settings.TRUSTED_PROXIES = []
    assert client_ip(request) == "10.0.0.2"
    settings.TRUSTED_PROXIES = ["10.0.0.2"]  # nginx appended the address it saw: the last entry
    assert client_ip(request) == "203.0.113.7"
    settings.TRUSTED_PROXIES = ["10.0.0.0/8", "203.0.113.7"]  # two proxies, one as a network
    assert client_ip(request) == "6.6.6.6"
    settings.TRUSTED_PROXIES = ["10.0.0.2", "203.0.113.7", "6.6.6.6"]  # all proxies: the first entry, never beyond
    assert client_ip(request) == "6.6.6.6"
    settings.TRUSTED_PROXIES = ["192.0.2.1"]  # the peer is not a trusted proxy: its header is ignored
    assert client_ip(request) == "10.0.0.2"
