"""Media on S3-compatible object storage (starmall/media_storage.py), against a real S3 server
process (moto's server mode), never a mocked client: uploads, the avatar and chat's lookups, and
files saved by the shop itself go to the bucket; the URLs handed out load from the public URL."""

from __future__ import annotations

import sys
from pathlib import Path

import boto3
import pytest
import requests
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage

from apps.files import services
from apps.files.models import Upload
from starmall.media_storage import LOCAL_BACKEND, S3_BACKEND, MediaStorageError, from_environ
from tests.files.test_uploads import png_bytes, upload

pytestmark = pytest.mark.django_db


def bucket_objects(moto_s3, bucket: str) -> dict[str, bytes]:
    """Every object in ``bucket``, read by a client of its own (not the shop's storage)."""
    client = boto3.client(
        "s3",
        endpoint_url=moto_s3.endpoint,
        aws_access_key_id=moto_s3.ACCESS_KEY,
        aws_secret_access_key=moto_s3.SECRET_KEY,
        region_name="us-east-1",
    )
    keys = [o["Key"] for o in client.list_objects_v2(Bucket=bucket).get("Contents", [])]
    return {key: client.get_object(Bucket=bucket, Key=key)["Body"].read() for key in keys}


def test_without_s3_settings_media_stay_local_files():
    chosen = from_environ({})
    assert (chosen.backend, chosen.media_url, chosen.is_object_storage) == (LOCAL_BACKEND, None, False)


def test_some_but_not_all_s3_settings_stop_start_up():
    with pytest.raises(MediaStorageError, match="missing MEDIA_S3_ACCESS_KEY, MEDIA_S3_SECRET_KEY"):
        from_environ({"MEDIA_S3_ENDPOINT_URL": "http://minio:9000", "MEDIA_S3_BUCKET": "shop"})
    with pytest.raises(MediaStorageError, match="MEDIA_S3_ADDRESSING_STYLE"):
        from_environ(
            {
                "MEDIA_S3_ENDPOINT_URL": "http://minio:9000",
                "MEDIA_S3_BUCKET": "shop",
                "MEDIA_S3_ACCESS_KEY": "k",
                "MEDIA_S3_SECRET_KEY": "s",
                "MEDIA_S3_ADDRESSING_STYLE": "sideways",
            }
        )


def test_s3_settings_path_style_region_and_public_url():
    environ = {
        "MEDIA_S3_ENDPOINT_URL": "https://cos.ap-shanghai.myqcloud.com/",
        "MEDIA_S3_BUCKET": "shop-1250000000",
        "MEDIA_S3_ACCESS_KEY": "AKID",
        "MEDIA_S3_SECRET_KEY": "secret",
        "MEDIA_S3_REGION": "ap-shanghai",
        "MEDIA_PUBLIC_URL": "https://cdn.example.com/media",
    }
    chosen = from_environ(environ)
    assert chosen.backend == S3_BACKEND and chosen.media_url == "https://cdn.example.com/media/"
    options = chosen.options
    assert (options["endpoint_url"], options["bucket_name"], options["region_name"], options["addressing_style"]) == (
        "https://cos.ap-shanghai.myqcloud.com",
        "shop-1250000000",
        "ap-shanghai",
        "path",
    )
    assert (options["custom_domain"], options["url_protocol"], options["querystring_auth"]) == (
        "cdn.example.com/media",
        "https:",
        False,
    )
    # Without MEDIA_PUBLIC_URL: the bucket's path-style address on the endpoint.
    del environ["MEDIA_PUBLIC_URL"]
    assert from_environ(environ).media_url == "https://cos.ap-shanghai.myqcloud.com/shop-1250000000/"


def test_an_upload_lands_in_the_bucket_and_loads_from_the_public_url(s3_media, api, settings):
    moto_s3, bucket, environ = s3_media
    local_before = set(Path(settings.MEDIA_ROOT).rglob("*"))  # other tests' demo pictures may be there
    data = png_bytes((12, 7))
    response = upload(api, data, name="a.png")
    assert response.status_code == 201, response.json()
    url = response.json()["url"]
    assert url.startswith(environ["MEDIA_PUBLIC_URL"] + "uploads/") and url.endswith(".png")
    name = services.upload_name(url)
    row = Upload.objects.get(name=name)
    stored = bucket_objects(moto_s3, bucket)
    assert list(stored) == [name] and len(stored[name]) == row.size
    # Fetched the way the mini-program does: a plain GET of the URL, no credentials.
    fetched = requests.get(url, timeout=10)
    assert fetched.status_code == 200 and fetched.content == stored[name]
    # Nothing was written to the local media folder.
    assert set(Path(settings.MEDIA_ROOT).rglob("*")) == local_before


def test_avatar_and_chat_lookups_find_uploads_in_the_bucket(s3_media, api, customer):
    from apps.files.selectors import upload_of

    url = upload(api, png_bytes(), name="me.png").json()["url"]
    assert services.is_our_upload_url(url, family="image") is True
    assert upload_of(url=url, uploader_id=customer.pk, kind="image").name == services.upload_name(url)
    response = api.patch("/api/v1/me", {"avatar_url": url}, format="json")
    assert response.status_code == 200, response.json()
    assert response.json()["avatar_url"] == url
    # A name never stored in the bucket is refused, as it is with local files.
    missing = url.rsplit("/", 1)[0] + "/" + "0" * 32 + ".png"
    assert services.is_our_upload_url(missing, family="image") is False


def test_files_the_shop_saves_itself_go_to_the_bucket_under_new_names(s3_media):
    moto_s3, bucket, environ = s3_media
    first = default_storage.save("demo/product-1.png", ContentFile(b"one"))
    second = default_storage.save("demo/product-1.png", ContentFile(b"two"))  # taken: a new name, not overwritten
    assert first == "demo/product-1.png" and second != first
    assert bucket_objects(moto_s3, bucket) == {first: b"one", second: b"two"}
    assert services.media_url(first) == environ["MEDIA_PUBLIC_URL"] + first
    assert requests.get(services.public_url(first), timeout=10).content == b"one"


@pytest.mark.postgres
def test_two_nodes_upload_through_one_avatar_through_the_other(
    moto_s3, transactional_db, make_customer, tmp_path, wechat
):
    """Two web servers (the shop's gunicorn) on one database, one Redis and one bucket: a file
    uploaded through A loads from its URL and is accepted as the avatar through B."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "faults"))
    from fault_helpers import ShopServer, worker_database_url

    from apps.accounts.tokens import token_issue

    bucket = "media-two-nodes"
    moto_s3.create_bucket(bucket)
    env = {**moto_s3.environ(bucket), "DATABASE_URL": worker_database_url()}
    nodes = []
    try:
        for name in ("a", "b"):
            (tmp_path / name).mkdir()
            nodes.append(ShopServer(tmp_path / name, wechat_url=wechat.url, env=env).start())
        a, b = nodes
        customer = make_customer()
        headers = {"Authorization": f"Bearer {token_issue(customer_id=customer.pk)}"}
        response = requests.post(
            f"{a.base}/api/v1/uploads",
            headers=headers,
            timeout=30,
            files={"file": ("x.png", png_bytes((9, 9)), "application/octet-stream")},
        )
        assert response.status_code == 201, response.text
        url = response.json()["url"]
        assert url.startswith(env["MEDIA_PUBLIC_URL"])
        name = url[len(env["MEDIA_PUBLIC_URL"]) :]
        assert requests.get(url, timeout=10).content == bucket_objects(moto_s3, bucket)[name]
        response = requests.patch(f"{b.base}/api/v1/me", json={"avatar_url": url}, headers=headers, timeout=30)
        assert response.status_code == 200, response.text
        assert response.json()["avatar_url"] == url
        customer.refresh_from_db()
        assert customer.avatar_url == url
    finally:
        for node in nodes:
            node.stop()
