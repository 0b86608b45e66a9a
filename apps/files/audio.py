"""Audio uploads are parsed, not trusted on their first bytes: mutagen reads the container.

Two or three magic bytes say nothing about the rest of a file (``ID3`` followed by an HTML page
is not a voice message). :func:`audio_duration_ms` has mutagen find real audio frames — MPEG
frames for MP3 (several consecutive headers, not "sketchy"), at least three ADTS frames for
AAC, an AAC (``mp4a``) sound track for M4A — and returns the duration it reads from the file,
which is what the shop keeps (never the client's claim).
"""

from __future__ import annotations

import io

from mutagen.aac import AAC as AdtsFile
from mutagen.mp3 import MP3 as Mp3File
from mutagen.mp4 import MP4 as Mp4File

from starmall.errors import InvalidInput

UNREADABLE = "无法读取该音频"


def audio_duration_ms(data: bytes, ext: str) -> int:
    """The duration in milliseconds (>= 1) of the audio ``data`` whose sniffed type is ``ext``
    (``mp3``, ``aac`` or ``m4a``, see ``apps.files.services.sniff``).

    Raises InvalidInput (``detail.file``) when mutagen cannot parse it, finds no audio frames,
    an M4A's track is not AAC, or the duration is zero.
    """
    try:
        if ext == "mp3":
            info = Mp3File(io.BytesIO(data)).info
            ok = not info.sketchy  # mutagen: the frames found do not look like a real stream
        elif ext == "aac":
            info = AdtsFile(io.BytesIO(data)).info
            ok = True
        elif ext == "m4a":
            info = Mp4File(io.BytesIO(data)).info
            ok = (info.codec or "").startswith("mp4a")  # AAC in MP4 (not ALAC and the like)
        else:
            raise ValueError(ext)
    except Exception as exc:  # noqa: BLE001 - mutagen's errors vary by format (and struct/EOF errors)
        raise InvalidInput("无法读取该音频。", file=[UNREADABLE]) from exc
    duration_ms = round((info.length or 0) * 1000)
    if not ok or duration_ms < 1:
        raise InvalidInput("无法读取该音频。", file=[UNREADABLE])
    return duration_ms
