"""Signing in at /admin/login/ without ?next= lands in the back office, not on a 404."""

import pytest
from django.contrib.auth import get_user_model

pytestmark = pytest.mark.django_db


def test_admin_login_without_next_lands_on_the_admin_index(client):
    get_user_model().objects.create_user("staff1", password="pw-login-1", is_staff=True)
    response = client.post("/admin/login/", {"username": "staff1", "password": "pw-login-1"})
    assert response.status_code == 302
    assert response["Location"] == "/admin/"
    assert client.get(response["Location"]).status_code == 200
