"""Where uploaded and generated files live: local ``MEDIA_ROOT`` (one machine) or S3-compatible
object storage (several machines: Tencent COS, Aliyun OSS, Qiniu, MinIO, AWS all speak it).

Every stored file goes through Django's storage API (``STORAGES["default"]``), whose backend
:func:`from_environ` chooses from the environment, so a file saved through one machine is read and served
from any other. Object storage takes all four of :data:`S3_REQUIRED` (none: local files), optionally
``MEDIA_S3_REGION``, ``MEDIA_S3_ADDRESSING_STYLE`` (``path``, the default, or ``virtual``) and
``MEDIA_PUBLIC_URL`` (default ``<endpoint>/<bucket>/``): docs/DEPLOY.md §7. A media URL is that base plus
the storage name, unsigned (the bucket or CDN serves it publicly); a name is never overwritten.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import urlsplit

S3_REQUIRED = ("MEDIA_S3_ENDPOINT_URL", "MEDIA_S3_BUCKET", "MEDIA_S3_ACCESS_KEY", "MEDIA_S3_SECRET_KEY")
S3_BACKEND = "storages.backends.s3.S3Storage"
LOCAL_BACKEND = "django.core.files.storage.FileSystemStorage"


class MediaStorageError(ValueError):
    """The media storage settings do not make sense (the message names the variable)."""


@dataclass(frozen=True)
class MediaStorage:
    """The chosen storage: ``backend`` and ``options`` for ``STORAGES["default"]``, and
    ``media_url``, the public base URL of stored files (``None``: keep ``MEDIA_URL``)."""

    backend: str
    options: dict
    media_url: str | None

    @property
    def storages_entry(self) -> dict:
        """``STORAGES["default"]``."""
        return {"BACKEND": self.backend, "OPTIONS": self.options} if self.options else {"BACKEND": self.backend}

    @property
    def is_object_storage(self) -> bool:
        return self.backend == S3_BACKEND


def from_environ(environ: Mapping[str, str]) -> MediaStorage:
    """The media storage that ``environ`` asks for (see the module's docstring).

    Raises :class:`MediaStorageError` when only some of :data:`S3_REQUIRED` are set, or a URL
    or the addressing style is malformed: start-up stops instead of writing files to one machine
    while the others look in the bucket.
    """
    values = {name: environ.get(name, "").strip() for name in S3_REQUIRED}
    given = [name for name, value in values.items() if value]
    if not given:
        return MediaStorage(LOCAL_BACKEND, {}, None)
    if len(given) != len(S3_REQUIRED):
        missing = [name for name in S3_REQUIRED if not values[name]]
        raise MediaStorageError(f"object storage needs all of {', '.join(S3_REQUIRED)}; missing {', '.join(missing)}")
    endpoint = values["MEDIA_S3_ENDPOINT_URL"].rstrip("/")
    parts = urlsplit(endpoint)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise MediaStorageError(f"MEDIA_S3_ENDPOINT_URL must be an http(s) URL, not {endpoint!r}")
    style = environ.get("MEDIA_S3_ADDRESSING_STYLE", "").strip() or "path"
    if style not in ("path", "virtual"):
        raise MediaStorageError(f"MEDIA_S3_ADDRESSING_STYLE must be path or virtual, not {style!r}")
    bucket = values["MEDIA_S3_BUCKET"]
    public = environ.get("MEDIA_PUBLIC_URL", "").strip() or f"{endpoint}/{bucket}/"
    public_parts = urlsplit(public)
    if public_parts.scheme not in ("http", "https") or not public_parts.hostname or public_parts.query:
        raise MediaStorageError(f"MEDIA_PUBLIC_URL must be an http(s) base URL without a query, not {public!r}")
    public = public.rstrip("/") + "/"
    from botocore.config import Config

    options = {
        "endpoint_url": endpoint,
        "bucket_name": bucket,
        "access_key": values["MEDIA_S3_ACCESS_KEY"],
        "secret_key": values["MEDIA_S3_SECRET_KEY"],
        "region_name": environ.get("MEDIA_S3_REGION", "").strip() or None,
        "addressing_style": style,
        "use_ssl": parts.scheme == "https",
        # The URLs handed out: MEDIA_PUBLIC_URL + name, unsigned (the bucket or CDN is public).
        "custom_domain": public.split("://", 1)[1].rstrip("/"),
        "url_protocol": public_parts.scheme + ":",
        "querystring_auth": False,
        "file_overwrite": False,
        # boto3 >= 1.36 adds CRC checksums to every PUT by default, which several S3-compatible
        # services (COS, OSS, older MinIO) refuse: only when the operation requires one.
        "client_config": Config(
            s3={"addressing_style": style},
            signature_version="s3v4",
            request_checksum_calculation="when_required",
            response_checksum_validation="when_required",
            connect_timeout=5,
            read_timeout=30,
            retries={"max_attempts": 3, "mode": "standard"},
        ),
    }
    return MediaStorage(S3_BACKEND, options, public)
