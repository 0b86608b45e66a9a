"""Image uploads: size read from the header first, then decoded and re-encoded a few at a time.

Decoding costs CPU and memory by pixels, not by bytes: a 5 MB PNG can claim 40 megapixels
(eight such uploads at once once kept both cores busy for 17.5 s). So the header's width x
height is checked against ``settings.UPLOAD_MAX_PIXELS`` (20 megapixels) before anything is
decoded (``Image.open`` reads only the header), and decoding plus re-encoding run under a
per-process semaphore of ``settings.UPLOAD_DECODE_CONCURRENCY`` slots: concurrent uploads queue
for a slot instead of all decoding at once. Re-encoding drops EXIF (GPS position, camera) and
anything appended to the file; the EXIF orientation is applied first so the picture stays upright.
"""

from __future__ import annotations

import io
import threading
from contextlib import contextmanager

from django.conf import settings
from PIL import Image, ImageOps

from starmall.errors import InvalidInput, ServiceUnavailable

DECODE_WAIT_SECONDS = 30  # an upload waiting longer than this for a slot gets 503 (and may retry)
_slots = threading.BoundedSemaphore(settings.UPLOAD_DECODE_CONCURRENCY)


@contextmanager
def decode_slot():
    """Hold one of the process's decoding slots; ServiceUnavailable after DECODE_WAIT_SECONDS."""
    if not _slots.acquire(timeout=DECODE_WAIT_SECONDS):
        raise ServiceUnavailable("图片处理繁忙，请稍后再试。")
    try:
        yield
    finally:
        _slots.release()


def image_reencode(data: bytes, pil_format: str) -> bytes:
    """A fresh ``pil_format`` (``"JPEG"`` or ``"PNG"``) file of the image ``data``, no metadata.

    Raises InvalidInput (``detail.file``): the content is another format, the header claims more
    than ``UPLOAD_MAX_PIXELS`` pixels (refused before decoding), or Pillow cannot decode it.
    Raises ServiceUnavailable when no decoding slot frees up in time.
    """
    limit = settings.UPLOAD_MAX_PIXELS
    too_large = InvalidInput("图片尺寸过大。", file=[f"图片最多 {limit} 像素（宽×高）"])
    try:
        probe = Image.open(io.BytesIO(data))  # the header only
    except Image.DecompressionBombError as exc:  # past Pillow's own limit (far above ours)
        raise too_large from exc
    except Exception as exc:  # noqa: BLE001 - truncated, corrupt: Pillow's errors vary by format
        raise InvalidInput("无法读取该图片。", file=["无法读取该图片"]) from exc
    with probe:
        if probe.format != pil_format:
            raise InvalidInput("图片格式与内容不符。", file=["图片格式与内容不符"])
        if probe.width * probe.height > limit:
            raise too_large
        with decode_slot():
            try:
                image = ImageOps.exif_transpose(probe)
                image.load()
            except Exception as exc:  # noqa: BLE001 - truncated or corrupt data past the header
                raise InvalidInput("无法读取该图片。", file=["无法读取该图片"]) from exc
            return _encode(image, pil_format)


def _encode(image: Image.Image, pil_format: str) -> bytes:
    out = io.BytesIO()
    if pil_format == "JPEG":
        if image.mode not in ("RGB", "L"):
            image = image.convert("RGB")
        image.save(out, format="JPEG", quality=88, optimize=True)
    else:
        if image.mode not in ("RGB", "RGBA", "L", "LA", "P"):
            image = image.convert("RGBA")
        image.save(out, format="PNG", optimize=True)
    return out.getvalue()
