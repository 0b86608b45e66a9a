"""A view-only staff login and the back office's actions (found from outside): the login-attempt
list (django-axes) offers its "Clean up expired attempts" action to a user who may only view it,
and running it answers a 500 (axes reads ``request.axes_attempt_time``, set only on the login
path). A view-only user should not be offered an action that deletes rows, and no admin POST
should be a 500."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.contrib.auth.models import Permission
from django.test import Client

pytestmark = pytest.mark.django_db


@pytest.fixture
def viewer(django_user_model):
    user = django_user_model.objects.create_user("viewonly", password="pw-123456", is_staff=True)
    user.user_permissions.set(Permission.objects.filter(codename__startswith="view_"))
    client = Client(raise_request_exception=False)
    client.force_login(user)
    return client


def test_view_only_user_cannot_run_axes_cleanup_and_gets_no_500(viewer):
    attempt = AccessAttempt.objects.create(
        username="someone", ip_address="10.0.0.1", user_agent="x", path_info="/admin/login/", failures_since_start=3
    )
    response = viewer.post(
        "/admin/axes/accessattempt/",
        {"action": "cleanup_expired_attempts", "_selected_action": [attempt.pk], "index": "0"},
    )
    assert response.status_code != 500
    assert AccessAttempt.objects.filter(pk=attempt.pk).exists()
    page = viewer.get("/admin/axes/accessattempt/")
    assert b"cleanup_expired_attempts" not in page.content  # a view-only user is offered no deleting action
