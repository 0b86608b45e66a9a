"""POST /api/v1/uploads: type sniffed from the content, size limits, EXIF stripped, absolute URLs."""

import io
from pathlib import Path

import pytest
from django.core.files.storage import default_storage
from django.test import Client
from PIL import Image

from apps.files import services
from apps.files.models import Upload
from starmall.errors import InvalidInput

pytestmark = [pytest.mark.django_db, pytest.mark.usefixtures("media")]


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
    served = Client().get(url[len(settings.SITE_URL) :])  # served by Django in development
    assert served.status_code == 200
    assert b"".join(served.streaming_content) == data


def test_png_and_audio_are_accepted_by_content(api, customer, voice):
    png = upload(api, png_bytes(), name="a.jpg")
    assert png.status_code == 201 and png.json()["url"].endswith(".png")
    mp3 = upload(api, voice("mp3"), name="v.txt")
    assert mp3.status_code == 201 and mp3.json()["url"].endswith(".mp3")
    aac = upload(api, voice("aac"), name="v.mp3")
    assert aac.status_code == 201 and aac.json()["url"].endswith(".aac")
    m4a = upload(api, voice("m4a"), name="v.aac")
    assert m4a.status_code == 201 and m4a.json()["url"].endswith(".m4a")
    assert services.is_our_upload_url(aac.json()["url"], family="audio")
    rows = {row.name: row for row in Upload.objects.all()}
    assert len(rows) == 4
    picture = rows[stored_name(png.json()["url"])]
    assert (picture.uploader_id, picture.kind, picture.content_type, picture.duration_ms) == (
        customer.pk,
        "image",
        "image/png",
        None,
    )
    assert picture.size == default_storage.size(picture.name)
    for response, mime in ((mp3, "audio/mpeg"), (aac, "audio/aac"), (m4a, "audio/mp4")):
        row = rows[stored_name(response.json()["url"])]
        assert (row.uploader_id, row.kind, row.content_type) == (customer.pk, "audio", mime)
        assert 2000 <= row.duration_ms <= 2150  # the samples are 2 s of tone (encoder padding)
        assert row.size == default_storage.size(row.name)


@pytest.mark.parametrize(
    "data",
    [
        b"ID3\x04\x00\x00\x00\x00\x00\x00" + b"<html><script>alert(document.cookie)</script></html>" * 20,
        b"\xff\xf1" + bytes(range(256)) * 12,  # ADTS sync, then no frame
        b"\xff\xf1\x50\x80\x02\x1f\xfc" + b"\x00" * 300,  # one ADTS header, nothing after
        b"\xff\xfb\x90\x00" + b"<?php system($_GET[1]); ?>" * 40,  # one MPEG frame sync
        b"\x00\x00\x00\x20ftypM4A \x00\x00\x00\x00M4A mp42isom" + b"\x00" * 200,  # no moov box
    ],
)
def test_audio_that_does_not_parse_is_invalid_and_nothing_is_stored(api, media, data):
    response = upload(api, data, name="v.mp3")
    assert response.status_code == 400
    assert response.json() == {"code": "invalid", "message": "无法读取该音频。", "detail": {"file": ["无法读取该音频"]}}
    assert list(Path(media).rglob("*.*")) == []
    assert Upload.objects.count() == 0


def test_audio_duration_is_read_from_the_file(voice):
    from apps.files.audio import audio_duration_ms

    assert 2000 <= audio_duration_ms(voice("mp3"), "mp3") <= 2150
    assert 2000 <= audio_duration_ms(voice("aac"), "aac") <= 2150
    assert 2000 <= audio_duration_ms(voice("m4a"), "m4a") <= 2150
    # the same bytes under another container's name do not parse
    with pytest.raises(InvalidInput):
        audio_duration_ms(voice("aac"), "m4a")


@pytest.mark.parametrize(
    "data",
    [
        b"<svg xmlns='http://www.w3.org/2000/svg'></svg>",
        b"GIF89a" + b"\x00" * 50,
        b"%PDF-1.4 hello",
        b"",
    ],
)
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
    assert response.json() == {
        "code": "payload_too_large",
        "message": "文件过大（最大 2 MB）。",
        "detail": {"max_bytes": 2 * 1024 * 1024},
    }
    big_png = b"\x89PNG\r\n\x1a\n" + b"\x00" * (5 * 1024 * 1024)
    assert upload(api, big_png).status_code == 413
    # 3 MB of image is fine for the size check (then it is not a decodable PNG: 400)
    assert upload(api, b"\x89PNG\r\n\x1a\n" + b"\x00" * (3 * 1024 * 1024)).status_code == 400


def test_upload_needs_a_token_and_a_file(make_api, api):
    assert (
        make_api().post("/api/v1/uploads", {"file": _named(png_bytes(), "a.png")}, format="multipart").status_code
        == 401
    )
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


def png_claiming(width: int, height: int) -> bytes:
    """A valid 8-bit grey PNG of ``width`` x ``height`` black pixels: huge when decoded, a few
    dozen KB on the wire (rows of zeros compress about 1000:1)."""
    import struct
    import zlib

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    packer = zlib.compressobj(9)
    row = b"\x00" * (width + 1)  # filter byte 0, then the row
    body = b"".join(packer.compress(row) for _ in range(height)) + packer.flush()
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", body) + chunk(b"IEND", b"")


@pytest.mark.parametrize("size", [(8000, 6000), (6000, 4000)])  # 48 and 24 megapixels
def test_an_image_over_the_pixel_limit_is_refused_from_its_header(api, media, monkeypatch, size):
    import time

    from PIL import ImageOps

    decoded = []
    monkeypatch.setattr(ImageOps, "exif_transpose", lambda image, **kw: decoded.append(image) or image)
    data = png_claiming(*size)
    assert len(data) < 100_000
    started = time.perf_counter()
    response = upload(api, data, name="big.png")
    elapsed = time.perf_counter() - started
    assert response.status_code == 400
    assert response.json() == {
        "code": "invalid",
        "message": "图片尺寸过大。",
        "detail": {"file": ["图片最多 20000000 像素（宽×高）"]},
    }
    assert decoded == []  # refused before anything was decoded
    assert elapsed < 1.0
    assert list(Path(media).rglob("*.*")) == [] and Upload.objects.count() == 0


def test_a_16_megapixel_image_is_accepted(api):
    response = upload(api, png_claiming(4000, 4000), name="ok.png")
    assert response.status_code == 201, response.json()
    with default_storage.open(stored_name(response.json()["url"])) as f, Image.open(f) as image:
        assert image.size == (4000, 4000)


def test_the_pixel_limit_is_a_setting(api, settings):
    settings.UPLOAD_MAX_PIXELS = 99
    response = upload(api, png_bytes((10, 10)), name="a.png")
    assert response.status_code == 400 and response.json()["detail"] == {"file": ["图片最多 99 像素（宽×高）"]}
    assert upload(api, png_bytes((9, 11)), name="a.png").status_code == 201


def test_concurrent_image_decodes_queue_for_the_slots(monkeypatch):
    """Eight uploads at once: at most UPLOAD_DECODE_CONCURRENCY (1) decode at any moment."""
    import threading
    import time

    from apps.files import images

    spans = []  # (start, end) of each encode, perf_counter seconds
    encode = images._encode

    def slow_encode(image, pil_format):
        start = time.perf_counter()
        time.sleep(0.05)
        out = encode(image, pil_format)
        spans.append((start, time.perf_counter()))
        return out

    monkeypatch.setattr(images, "_encode", slow_encode)
    data = png_bytes((32, 32))
    barrier = threading.Barrier(8)
    results = []

    def one():
        barrier.wait()
        results.append(len(images.image_reencode(data, "PNG")))

    threads = [threading.Thread(target=one) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(10)
    assert len(results) == 8 and all(n > 0 for n in results)
    spans.sort()
    assert len(spans) == 8
    assert all(later[0] >= earlier[1] for earlier, later in zip(spans, spans[1:]))  # never two at once


def test_an_upload_waiting_too_long_for_a_decode_slot_is_503(api, monkeypatch, media):
    from apps.files import images

    monkeypatch.setattr(images, "DECODE_WAIT_SECONDS", 0.05)
    with images.decode_slot():  # every slot of this process busy
        response = upload(api, png_bytes(), name="a.png")
    assert response.status_code == 503 and response.json()["code"] == "service_unavailable"
    assert list(Path(media).rglob("*.*")) == [] and Upload.objects.count() == 0
