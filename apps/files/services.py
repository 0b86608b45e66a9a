"""Uploaded files (review images, avatars, chat voice and images) and the shop's media URLs.

:func:`upload_store` is the one way a file enters the shop: its type is sniffed from the content
(magic bytes), never from the name or the client's Content-Type, then checked for real (images
re-encoded by Pillow, ``apps.files.images``; audio parsed by mutagen, ``apps.files.audio``), stored
through Django's storage API (``STORAGES["default"]``) under a random name and recorded in an
``Upload`` row. URLs handed out are absolute (``SITE_URL`` + ``MEDIA_URL`` for local storage, else
the backend's own). :func:`is_our_upload_url` lets reviews and avatars accept only such URLs; chat
looks the row up (``apps.files.selectors.upload_of``: the sender's own upload of the right kind).
"""

from __future__ import annotations

import re
import uuid
from dataclasses import dataclass

from django.conf import settings
from django.core.files.base import ContentFile
from django.core.files.storage import default_storage
from django.utils import timezone

from apps.files.audio import audio_duration_ms
from apps.files.exceptions import PayloadTooLarge
from apps.files.images import image_reencode
from apps.files.models import Upload
from starmall.errors import InvalidInput

MB = 1024 * 1024
IMAGE_MAX_BYTES = 5 * MB  # API.md: JPEG/PNG <= 5 MB
AUDIO_MAX_BYTES = 2 * MB  # API.md: AAC/MP3 <= 2 MB
UPLOAD_PREFIX = "uploads/"
_NAME = re.compile(r"uploads/[0-9]{4}/[0-9]{2}/[0-9a-f]{32}\.(?:jpg|png|mp3|aac|m4a)")


@dataclass(frozen=True)
class Kind:
    """A type the shop accepts: ``ext`` of the stored name, ``image`` or ``audio``, size limit,
    the Content-Type it is stored as."""

    ext: str
    family: str
    max_bytes: int
    mime: str


JPEG = Kind("jpg", "image", IMAGE_MAX_BYTES, "image/jpeg")
PNG = Kind("png", "image", IMAGE_MAX_BYTES, "image/png")
MP3 = Kind("mp3", "audio", AUDIO_MAX_BYTES, "audio/mpeg")
AAC = Kind("aac", "audio", AUDIO_MAX_BYTES, "audio/aac")  # ADTS stream (wx RecorderManager format "aac")
M4A = Kind("m4a", "audio", AUDIO_MAX_BYTES, "audio/mp4")  # AAC in an MP4 container ("M4A " brand)


def sniff(head: bytes) -> Kind | None:
    """The type of a file from its first bytes (at least 12), or None when not accepted.

    JPEG ``FF D8 FF``; PNG's 8-byte signature; MP3 an ID3v2 tag or an MPEG audio frame sync
    (11 bits set, layer not 0); AAC an ADTS frame sync (12 bits set, layer 0); M4A an MP4
    ``ftyp`` box with brand ``M4A``.
    """
    if head[:3] == b"\xff\xd8\xff":
        return JPEG
    if head[:8] == b"\x89PNG\r\n\x1a\n":
        return PNG
    if head[:3] == b"ID3":
        return MP3
    if len(head) >= 2 and head[0] == 0xFF:
        if head[1] & 0xF6 == 0xF0:
            return AAC
        if head[1] & 0xE0 == 0xE0 and (head[1] >> 1) & 0x3:
            return MP3
    if head[4:8] == b"ftyp" and head[8:11] == b"M4A":
        return M4A
    return None


def upload_store(*, file, uploader_id: int) -> Upload:
    """Check, clean and store an uploaded file for customer ``uploader_id``; return its row.

    ``file``: a Django ``UploadedFile`` (or any file object with ``size`` and ``read``). Accepted
    (API.md): JPEG/PNG up to ``IMAGE_MAX_BYTES`` (5 MB) and ``UPLOAD_MAX_PIXELS``, re-encoded;
    AAC/MP3/M4A up to ``AUDIO_MAX_BYTES`` (2 MB) that mutagen parses (``duration_ms`` from the file).
    Raises InvalidInput (``detail.file``: not an accepted type, an image too large or that Pillow
    cannot decode, audio that does not parse), PayloadTooLarge (``detail.max_bytes``),
    ServiceUnavailable (every image decoding slot busy too long). Stored as ``uploads/<yyyy>/<mm>/<random>.<ext>``
    (then its ``Upload`` row; a refused file stores nothing); the URL is :func:`media_url` of ``upload.name``.
    """
    size = getattr(file, "size", None)
    if size is None:
        raise InvalidInput("请上传文件。", file=["请上传文件"])
    head = file.read(16)
    kind = sniff(head)
    if kind is None:
        raise InvalidInput("只支持 JPEG/PNG 图片和 AAC/MP3 音频。", file=["只支持 JPEG/PNG 图片和 AAC/MP3 音频"])
    if size > kind.max_bytes:
        raise PayloadTooLarge(f"文件过大（最大 {kind.max_bytes // MB} MB）。", max_bytes=kind.max_bytes)
    file.seek(0)
    data = file.read(kind.max_bytes + 1)
    if len(data) > kind.max_bytes:  # the declared size lied
        raise PayloadTooLarge(f"文件过大（最大 {kind.max_bytes // MB} MB）。", max_bytes=kind.max_bytes)
    duration_ms = None
    if kind.family == "image":
        data = image_reencode(data, "JPEG" if kind is JPEG else "PNG")
    else:
        duration_ms = audio_duration_ms(data, kind.ext)
    now = timezone.localtime()
    name = f"{UPLOAD_PREFIX}{now:%Y/%m}/{uuid.uuid4().hex}.{kind.ext}"
    name = default_storage.save(name, ContentFile(data))
    return Upload.objects.create(
        uploader_id=uploader_id,
        kind=kind.family,
        name=name,
        size=len(data),
        content_type=kind.mime,
        duration_ms=duration_ms,
    )


def absolute_url(url: str) -> str:
    """``url`` made absolute against ``SITE_URL`` (an absolute one is returned as it is)."""
    if not url or re.match(r"^[a-z][a-z0-9+.-]*://", url, re.I):
        return url
    return settings.SITE_URL + ("" if url.startswith("/") else "/") + url


def media_url(name: str) -> str:
    """The absolute URL of a stored file ``name`` (storage name, e.g. ``demo/product-1.png``)."""
    return absolute_url(default_storage.url(name))


def public_url(value: str) -> str:
    """A URL as kept on a row (product cover, image list) made absolute for the API: an
    absolute URL stays, a path (``/static/...``) gets ``SITE_URL``, a bare storage name
    (``demo/product-1.png``) becomes its media URL."""
    if not value or re.match(r"^[a-z][a-z0-9+.-]*://", value, re.I):
        return value
    if value.startswith("/"):
        return absolute_url(value)
    return media_url(value)


def upload_name(url: str) -> str | None:
    """The storage name of one of our uploads from its URL, or None when it is not one."""
    if not isinstance(url, str) or len(url) > 500:
        return None
    base = media_url(UPLOAD_PREFIX)
    if not url.startswith(base):
        return None
    name = UPLOAD_PREFIX + url[len(base) :]
    return name if _NAME.fullmatch(name) else None


def is_our_upload_url(url: str, *, family: str | None = None) -> bool:
    """True when ``url`` is a file :func:`upload_store` stored (and it still exists).

    ``family`` ``"image"`` or ``"audio"`` narrows it to that kind. Reviews (images), the
    avatar and chat accept only these URLs, so the mini-program never shows a third party's
    address or a file that never passed the checks above.
    """
    name = upload_name(url)
    if name is None:
        return False
    if family == "image" and not name.endswith((".jpg", ".png")):
        return False
    if family == "audio" and not name.endswith((".mp3", ".aac", ".m4a")):
        return False
    return default_storage.exists(name)
