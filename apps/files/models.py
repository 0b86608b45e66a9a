"""What was uploaded, by whom: one row per file :func:`apps.files.services.upload_store` stored.

A URL alone says only that a file is under our media prefix; the row says it passed the checks
(sniffed, images re-encoded, audio parsed), what kind it is and who sent it, so a chat message
can carry only the sender's own image or voice (``apps.chat.media``). Rows are looked up by the
storage name (``uploads/2026/12/<hex>.png``), never by a filesystem path: the storage may be
S3 (django-storages) in production.
"""

from django.db import models
from django.db.models import Q


class Upload(models.Model):
    """One stored upload: ``name`` (UNIQUE storage name), ``kind``, ``size`` in bytes, the
    sniffed ``content_type``, ``duration_ms`` read from the audio container (audio only).

    ``uploader_id`` is the ``accounts.Customer`` id of the signed-in customer who uploaded it: a
    plain integer, not a ForeignKey, because files sits below accounts in the layer order (its
    model and migration must not depend on accounts), and ``settings.AUTH_USER_MODEL`` is the
    staff user, not the customer.
    """

    class Kind(models.TextChoices):
        IMAGE = "image", "图片"  # JPEG/PNG, decoded and re-encoded by Pillow
        AUDIO = "audio", "音频"  # MP3/AAC (ADTS)/M4A, container parsed by mutagen

    uploader_id = models.BigIntegerField(verbose_name="上传者（顾客 ID）", db_index=True)  # accounts.Customer.pk
    kind = models.CharField(verbose_name="类型", max_length=8, choices=Kind.choices)
    name = models.CharField(
        verbose_name="存储名", max_length=255, unique=True
    )  # storage name, e.g. uploads/2026/12/<hex>.mp3
    size = models.PositiveIntegerField(verbose_name="大小（字节）")  # bytes as stored (images: after re-encoding)
    content_type = models.CharField(
        verbose_name="内容类型", max_length=32
    )  # from the content: image/png, audio/mpeg...
    duration_ms = models.PositiveIntegerField(
        verbose_name="时长（毫秒）", null=True, blank=True
    )  # ms, audio only, from the file
    created_at = models.DateTimeField(verbose_name="上传时间", auto_now_add=True)

    class Meta:
        verbose_name = "上传文件"
        verbose_name_plural = "上传文件"
        ordering = ["-id"]
        constraints = [
            models.CheckConstraint(
                condition=(Q(kind="audio", duration_ms__gte=1) | Q(kind="image", duration_ms__isnull=True)),
                name="upload_audio_has_duration",
            ),
        ]

    def __str__(self) -> str:
        return self.name
