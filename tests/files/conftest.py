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


class MotoS3:
    """moto's S3 server (``python -m moto.server``) on a free loopback port: a real process
    speaking the S3 HTTP protocol, as MinIO, COS or OSS would. ``environ(bucket)`` gives the
    shop's ``MEDIA_S3_*`` variables for a bucket created on it."""

    ACCESS_KEY, SECRET_KEY = "starmall-test-key", "starmall-test-secret"

    def __init__(self, workdir: Path):
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            self.port = s.getsockname()[1]
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.log = workdir / "moto.log"
        self.process = None

    def start(self) -> None:
        import subprocess
        import sys
        import time

        import requests

        with open(self.log, "wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = time.monotonic() + 30
        while True:
            assert self.process.poll() is None, self.log.read_text()[-2000:]
            try:
                requests.get(self.endpoint + "/moto-api/", timeout=1)
                return
            except requests.RequestException:
                assert time.monotonic() < deadline, "moto server did not start"
                time.sleep(0.2)

    def stop(self) -> None:
        import os
        import signal

        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            self.process.wait(10)

    def create_bucket(self, name: str) -> None:
        import boto3

        client = boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            aws_access_key_id=self.ACCESS_KEY,
            aws_secret_access_key=self.SECRET_KEY,
            region_name="us-east-1",
        )
        client.create_bucket(Bucket=name)
        # Public read, as the shop's bucket (or the CDN's origin) is set up: docs/DEPLOY.md.
        import json

        client.put_bucket_policy(
            Bucket=name,
            Policy=json.dumps(
                {
                    "Version": "2012-10-17",
                    "Statement": [
                        {
                            "Effect": "Allow",
                            "Principal": "*",
                            "Action": "s3:GetObject",
                            "Resource": f"arn:aws:s3:::{name}/*",
                        }
                    ],
                }
            ),
        )

    def environ(self, bucket: str) -> dict[str, str]:
        return {
            "MEDIA_S3_ENDPOINT_URL": self.endpoint,
            "MEDIA_S3_BUCKET": bucket,
            "MEDIA_S3_ACCESS_KEY": self.ACCESS_KEY,
            "MEDIA_S3_SECRET_KEY": self.SECRET_KEY,
            "MEDIA_S3_REGION": "us-east-1",
            "MEDIA_PUBLIC_URL": f"{self.endpoint}/{bucket}/",
        }


@pytest.fixture(scope="module")
def moto_s3(tmp_path_factory):
    """One moto S3 server per test module, stopped (its own process group) at the end."""
    server = MotoS3(tmp_path_factory.mktemp("moto"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def s3_media(moto_s3, settings, request):
    """The shop's default storage switched to a fresh bucket on :func:`moto_s3`, configured as
    ``starmall.settings`` does from ``MEDIA_S3_*``; -> ``(moto_s3, bucket, environ)``."""
    import importlib
    import re

    from starmall.media_storage import from_environ

    # The URLconf reads MEDIA_URL once, when first imported: import it with the suite's settings
    # (else the local /media/ route would be missing for every later test in this process).
    importlib.import_module(settings.ROOT_URLCONF)

    bucket = "media-" + re.sub(r"[^a-z0-9]+", "-", request.node.name.lower())[:40].strip("-")
    moto_s3.create_bucket(bucket)
    environ = moto_s3.environ(bucket)
    chosen = from_environ(environ)
    settings.STORAGES = {**settings.STORAGES, "default": chosen.storages_entry}
    settings.MEDIA_URL = chosen.media_url
    return moto_s3, bucket, environ
