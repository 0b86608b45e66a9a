"""Celery tasks of content: thin wrappers around the services."""

from celery import shared_task


@shared_task
def article_views_flush() -> int:
    """Beat: add the article views counted in Redis to ``Article.views`` (safe to run twice)."""
    from apps.content.article_views import article_views_flush as flush

    return flush()
