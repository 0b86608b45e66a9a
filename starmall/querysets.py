"""Querysets shared by the apps' models."""

from __future__ import annotations

from django.db import models
from django.utils import timezone


class AutoNowQuerySet(models.QuerySet):
    """``update()`` also sets the model's ``auto_now`` fields (e.g. ``updated_at``) to now, as
    ``save()`` does — the conditional UPDATEs that move a row's state would otherwise leave its
    更新时间 at the row's creation. A value the caller passes wins."""

    def update(self, **kwargs):
        now = timezone.now()
        for field in self.model._meta.concrete_fields:
            if getattr(field, "auto_now", False):
                kwargs.setdefault(field.attname, now)
        return super().update(**kwargs)
