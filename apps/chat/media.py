"""Which files a chat message may carry: the sender's own upload, of the message's kind.

A URL under ``MEDIA_URL`` proves nothing (a file that was never stored, a demo product picture,
``/media/%2e%2e/...``, a PNG sent as voice, someone else's photo). An image message must name
an image, a voice message an audio file, that ``POST /api/v1/uploads`` stored for the sender
(an ``apps.files`` ``Upload`` row, found by storage name). A voice message's duration is the
one mutagen read from the file, not the client's.
"""

from __future__ import annotations

from apps.chat.models import ContentType
from apps.files.models import Upload
from apps.files.selectors import upload_of
from starmall.errors import InvalidInput

VOICE_SECONDS = (1, 60)


def message_upload(*, url: str, uploader_id: int, content_type: int) -> Upload:
    """The upload a voice (2) or image (3) message of customer ``uploader_id`` carries.

    Raises InvalidInput (``detail.content``) when ``url`` is not that customer's own upload of
    the right kind (image for 3, audio for 2).
    """
    if content_type == ContentType.IMAGE:
        upload = upload_of(url=url, uploader_id=uploader_id, kind=Upload.Kind.IMAGE)
        if upload is None:
            raise InvalidInput("图片消息只能发送你上传的图片。", content=["必须是你通过上传接口上传的图片地址"])
        return upload
    upload = upload_of(url=url, uploader_id=uploader_id, kind=Upload.Kind.AUDIO)
    if upload is None:
        raise InvalidInput("语音消息只能发送你上传的音频。", content=["必须是你通过上传接口上传的音频地址"])
    return upload


def voice_seconds(upload: Upload) -> int:
    """A voice message's duration in whole seconds (rounded, at least 1) from its upload's
    ``duration_ms``; InvalidInput (``detail.content``) when longer than 60 s (API.md: 1..60)."""
    low, high = VOICE_SECONDS
    seconds = max(low, (upload.duration_ms + 500) // 1000)
    if seconds > high:
        raise InvalidInput(f"语音最长 {high} 秒。", content=[f"语音时长必须是 {low} 到 {high} 秒"])
    return seconds
