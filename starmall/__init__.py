"""Starmall project package: settings, URLs, the Celery app and the WeChat sandbox."""

from .celery import app as celery_app

__all__ = ("celery_app",)
