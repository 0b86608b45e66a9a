"""Reads of uploads: which stored upload a URL names, for whom."""

from __future__ import annotations

from apps.files.models import Upload
from apps.files.services import upload_name


def upload_of(*, url: str, uploader_id: int, kind: str) -> Upload | None:
    """The ``Upload`` that ``url`` names, when customer ``uploader_id`` uploaded it and it is of
    ``kind`` (``Upload.Kind``); None otherwise (not one of our upload URLs, never stored, another
    customer's, another kind).

    The URL must be exactly one :func:`apps.files.services.media_url` hands out; the row is found
    by its storage name (not a filesystem path: the storage may be S3).
    """
    name = upload_name(url)
    if name is None:
        return None
    return Upload.objects.filter(name=name, uploader_id=uploader_id, kind=kind).first()
