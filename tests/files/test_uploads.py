"""POST /api/v1/uploads: type sniffed from the content, size limits, EXIF stripped, absolute URLs."""

import io
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from PIL import Image

from apps.files import services

pytestmark = pytest.mark.django_db


def jpeg_with_exif() -> bytes:
    image = Image.new("RGB", (64, 48), (200, 10, 10))
    exif = Image.Exif()
    exif[0x010F] = "SecretCam"  # Make
    exif[0x8825] = {2: (30.0, 15.0, 0.0)}  # GPSInfo: latitude
    out = io.BytesIO()
    image.save(out, format="JPEG", exif=exif.tobytes())
    return out.getvalue()


def png_bytes(size=(10, 10)) -> bytes:
    out = io.BytesIO()
    Image.new("RGB", size, (0, 128, 0)).save(out, format="PNG")
    return out.getvalue()


def upload(api, data: bytes, name: str = "x.bin"):
    return api.post("/api/v1/uploads", {"file": _named(data, name)}, format="multipart")


def _named(data: bytes, name: str):
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/octet-stream")


def stored_name(url: str) -> str:
    return services.upload_name(url)


def test_jpeg_is_reencoded_without_exif_and_served_at_an_absolute_url(api, settings):
    raw = jpeg_with_exif()
    assert b"SecretCam" in raw
    response = upload(api, raw, name="photo.png")  # the name lies: the content decides
    assert response.status_code == 201, response.json()
    url = response.json()["url"]
    assert url.startswith(settings.SITE_URL + "/media/uploads/") and url.endswith(".jpg")
    name = stored_name(url)
    with default_storage.open(name) as f:
        data = f.read()
    assert b"SecretCam" not in data
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "JPEG" and image.size == (64, 48)
        assert not image.getexif()
    assert services.is_our_upload_url(url) and services.is_our_upload_url(url, family="image")
    assert not services.is_our_upload_url(url, family="audio")
    served = Client().get(url[len(settings.SITE_URL):])  # served by Django in development
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == data


def test_png_and_audio_are_accepted_by_content(api):
    png = upload(api, png_bytes(), name="a.jpg")
    assert png.status_code == 201 and png.json()["url"].endswith(".png")
    mp3 = upload(api, b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"\x00" * 500, name="v.txt")
    assert mp3.status_code == 201 and mp3.json()["url"].endswith(".mp3")
    aac = upload(api, b"\xff\xf1\x50\x80\x02\x1f\xfc" + b"\x00" * 300, name="v.mp3")
    assert aac.status_code == 201 and aac.json()["url"].endswith(".aac")
    assert services.is_our_upload_url(aac.json()["url"], family="audio")


@pytest.mark.parametrize("data", [
    b"<svg xmlns='http://www.w3.org/2000/svg'></svg>",
    b"GIF89a" + b"\x00" * 50,
    b"%PDF-1.4 hello",
    b"",
])
def test_other_content_is_refused_as_invalid(api, data):
    response = upload(api, data, name="photo.jpg")
    assert response.status_code == 400
    assert response.json()["code"] == "invalid" and "file" in response.json()["detail"]


def test_a_truncated_jpeg_is_invalid_and_nothing_is_stored(api, media):
    response = upload(api, jpeg_with_exif()[:200], name="a.jpg")
    assert response.status_code == 400
    assert response.json()["detail"] == {"file": ["无法读取该图片"]}
    assert list(Path(media).rglob("*.*")) == []


def test_size_limits_by_type_are_413(api):
    big_audio = b"ID3" + b"\x00" * (2 * 1024 * 1024)
    response = upload(api, big_audio, name="v.mp3")
    assert response.status_code == 413
    assert response.json() == {"code": "payload_too_large", "message": "文件过大（最大 2 MB）。",
                               "detail": {"max_bytes": 2 * 1024 * 1024}}
    big_png = b"\x89PNG\r\n\x1a\n" + b"\x00" * (5 * 1024 * 1024)
    assert upload(api, big_png).status_code == 413
    # 3 MB of image is fine for the size check (then it is not a decodable PNG: 400)
    assert upload(api, b"\x89PNG\r\n\x1a\n" + b"\x00" * (3 * 1024 * 1024)).status_code == 400


def test_upload_needs_a_token_and_a_file(make_api, api):
    assert make_api().post("/api/v1/uploads", {"file": _named(png_bytes(), "a.png")}, format="multipart").status_code == 401
    missing = api.post("/api/v1/uploads", {}, format="multipart")
    assert missing.status_code == 400 and "file" in missing.json()["detail"]


def test_is_our_upload_url_refuses_foreign_and_forged_urls(settings):
    base = settings.SITE_URL + "/media/uploads/2026/12/"
    assert not services.is_our_upload_url("https://evil.example/a.jpg")
    assert not services.is_our_upload_url(base + "../../../etc/passwd")
    assert not services.is_our_upload_url(base + "0" * 32 + ".jpg")  # well-formed, never stored
    assert not services.is_our_upload_url(None)


def test_sniff_recognises_the_magic_bytes():
    assert services.sniff(b"\xff\xd8\xff\xe0") is services.JPEG
    assert services.sniff(b"\x89PNG\r\n\x1a\n....") is services.PNG
    assert services.sniff(b"\xff\xfb\x90\x00") is services.MP3  # MPEG-1 layer III frame
    assert services.sniff(b"\xff\xf1\x50\x80") is services.AAC  # ADTS
    assert services.sniff(b"\x00\x00\x00\x20ftypM4A \x00") is services.M4A
    assert services.sniff(b"RIFF....WAVE") is None


def test_a_body_too_big_for_any_file_is_refused_before_it_is_read(api, media):
    body = b"\x89PNG\r\n\x1a\n" + b"\x00" * (6 * 1024 * 1024)
    response = upload(api, body, name="big.png")
    assert response.status_code == 413
    assert response.json()["detail"] == {"max_bytes": 5 * 1024 * 1024}
    assert list(media.rglob("*.png")) == []
