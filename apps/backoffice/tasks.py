"""Celery tasks of the back office: thin wrappers around its services."""

from celery import shared_task

from apps.backoffice import day_figures


@shared_task
def day_figures_close() -> int:
    """Beat, daily 00:10 Shanghai: the dashboard's daily figures of yesterday summed again, and
    every closed day without its row filled (``day_figures.days_close``); the days stored."""
    return day_figures.days_close()
