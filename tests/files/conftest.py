"""Upload fixtures: real audio samples in ``tests/files/data``.

``data/voice.{mp3,aac,m4a}`` are 2 seconds of a 440 Hz tone, 16 kHz mono at 16 kbit/s, made
once with ffmpeg (``-f lavfi -i sine=frequency=440:duration=2:sample_rate=16000 -ac 1 -b:a 16k``
and ``-c:a libmp3lame -id3v2_version 0`` / ``-c:a aac -f adts`` / ``-c:a aac -brand M4A``, all
``-fflags +bitexact``); the tests need only the files, not ffmpeg.
"""

from pathlib import Path

import pytest

DATA = Path(__file__).parent / "data"


@pytest.fixture
def voice():
    """``voice("mp3")`` -> the bytes of the 2-second sample of that type."""
    return lambda ext: (DATA / f"voice.{ext}").read_bytes()
