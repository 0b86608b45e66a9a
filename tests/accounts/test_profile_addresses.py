"""PATCH /me, PATCH/DELETE /addresses/{id}: one default, at most 20, someone else's is 404."""

import io

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.db import IntegrityError, transaction
from PIL import Image

from apps.accounts.models import Address, Customer

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]

BODY = {
    "name": "王五",
    "phone": "13700000000",
    "province": "上海市",
    "city": "上海市",
    "district": "徐汇区",
    "detail": "漕溪北路1号",
}


def add(api, **extra):
    response = api.post("/api/v1/addresses", {**BODY, **extra}, format="json")
    assert response.status_code == 201, response.json()
    return response.json()


def defaults(customer) -> list[int]:
    return list(Address.objects.filter(customer=customer, is_default=True).values_list("pk", flat=True))


def test_patch_me_changes_nickname_and_avatar_from_our_uploads_only(api, customer):
    out = io.BytesIO()
    Image.new("RGB", (8, 8)).save(out, format="PNG")
    url = api.post("/api/v1/uploads", {"file": SimpleUploadedFile("a.png", out.getvalue())}, format="multipart").json()[
        "url"
    ]
    response = api.patch("/api/v1/me", {"nickname": "星星", "avatar_url": url}, format="json")
    assert response.status_code == 200
    assert response.json()["nickname"] == "星星" and response.json()["avatar_url"] == url
    row = Customer.objects.get(pk=customer.pk)
    assert (row.nickname, row.avatar_url) == ("星星", url)

    foreign = api.patch("/api/v1/me", {"avatar_url": "https://evil.example/x.png"}, format="json")
    assert foreign.status_code == 400 and "avatar_url" in foreign.json()["detail"]
    assert Customer.objects.get(pk=customer.pk).avatar_url == url
    empty = api.patch("/api/v1/me", {"nickname": "   "}, format="json")
    assert empty.status_code == 400 and empty.json()["code"] == "invalid"
    assert api.get("/api/v1/me").json()["nickname"] == "星星"


def test_patch_address_fields_and_default(api, customer):
    first = add(api)
    second = add(api, detail="第二个")
    assert first["is_default"] is True and second["is_default"] is False
    response = api.patch(f"/api/v1/addresses/{second['id']}", {"detail": "改过的", "is_default": True}, format="json")
    assert response.status_code == 200
    assert response.json()["detail"] == "改过的" and response.json()["is_default"] is True
    assert defaults(customer) == [second["id"]]
    # un-defaulting the default passes it to the newest other address
    api.patch(f"/api/v1/addresses/{second['id']}", {"is_default": False}, format="json")
    assert defaults(customer) == [first["id"]]
    bad = api.patch(f"/api/v1/addresses/{first['id']}", {"phone": "abc"}, format="json")
    assert bad.status_code == 400 and "phone" in bad.json()["detail"]


def test_delete_default_picks_the_newest_or_none(api, customer):
    a = add(api)
    b = add(api, detail="B")
    c = add(api, detail="C")
    assert defaults(customer) == [a["id"]]
    assert api.delete(f"/api/v1/addresses/{a['id']}").status_code == 204
    assert defaults(customer) == [c["id"]]
    assert api.delete(f"/api/v1/addresses/{b['id']}").status_code == 204
    assert defaults(customer) == [c["id"]]
    assert api.delete(f"/api/v1/addresses/{c['id']}").status_code == 204
    assert Address.objects.filter(customer=customer).count() == 0
    assert api.get("/api/v1/addresses").json() == []


def test_someone_elses_address_is_404(api, make_api, make_customer, customer):
    mine = add(api)
    other = make_api(make_customer())
    assert other.patch(f"/api/v1/addresses/{mine['id']}", {"detail": "x"}, format="json").status_code == 404
    response = other.delete(f"/api/v1/addresses/{mine['id']}")
    assert response.status_code == 404 and response.json()["code"] == "not_found"
    assert Address.objects.get(pk=mine["id"]).detail == BODY["detail"]


def test_at_most_20_addresses(api, customer):
    for i in range(20):
        add(api, detail=f"{i}号")
    response = api.post("/api/v1/addresses", BODY, format="json")
    assert response.status_code == 409
    assert response.json()["code"] == "limit_exceeded"
    assert response.json()["detail"] == {"max_addresses": 20}
    assert Address.objects.filter(customer=customer).count() == 20


def test_the_database_refuses_two_defaults(customer):
    Address.objects.create(customer=customer, is_default=True, **BODY)
    with pytest.raises(IntegrityError), transaction.atomic():
        Address.objects.create(customer=customer, is_default=True, **BODY)
