"""The few HTML pages outside the API and the admin: the front page at ``/`` and the Chinese
"page not found" for any other path, also while ``DEBUG`` is on (``make run``).

API paths (``/api/``) keep their JSON answers untouched (``starmall.api.health.api_not_found``
and DRF's error format).
"""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpResponseRedirect
from django.shortcuts import render
from django.templatetags.static import static
from django.urls import reverse
from django.views.decorators.http import require_safe

from starmall.api.middleware import API_PREFIX

NOT_FOUND_TEMPLATE = "404.html"  # Django's handler404 renders this name too (DEBUG off)


@require_safe
def home(request):
    """``GET /``: the shop's name (``SHOP_NAME``) and links to the API docs, the back office and
    ``/healthz``. Plain HTML, no script; the admin's "查看站点" link leads here."""
    return render(
        request,
        "starmall/home.html",
        {
            "shop_name": settings.SHOP_NAME,
            "docs_url": reverse("docs"),
            "admin_url": reverse("admin:index"),
            "health_url": reverse("healthz"),
        },
    )


class NotFoundPageMiddleware:
    """With ``DEBUG`` on, an HTML 404 outside ``/api/`` is the Chinese ``404.html`` instead of
    Django's English debug page (which lists every URL pattern).

    Django answers a 404 with its technical page whenever ``DEBUG`` is on and never calls
    ``handler404`` then; with ``DEBUG`` off it renders ``404.html`` itself, so this middleware
    is not loaded at all (``MiddlewareNotUsed``). Placed outside CommonMiddleware, which
    still redirects ``/admin`` to ``/admin/`` before this sees the 404.
    """

    def __init__(self, get_response):
        if not settings.DEBUG:
            raise MiddlewareNotUsed
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if (
            response.status_code == 404
            and not request.path.startswith(API_PREFIX)
            and response.get("Content-Type", "").startswith("text/html")
        ):
            return render(request, NOT_FOUND_TEMPLATE, status=404)
        return response


FAVICON = "backoffice/favicon.ico"  # the admin's <link rel=icon> (UNFOLD["SITE_FAVICONS"]) names it too


@require_safe
def favicon(request):
    """``GET /favicon.ico``: a redirect to the shop's icon among the static files (browsers ask
    for it on every page that names none). A 302: the static file's address may change."""
    return HttpResponseRedirect(static(FAVICON))
