"""The 403 page (``handler403``): a Chinese page saying which permission is missing and which role
holds it (``apps.backoffice.roles``), instead of Django's bare English "403 Forbidden".

The permission is read from the refusal's text (``PermissionDenied("需要权限 orders.change_price")``,
as the back office's views raise it) or, for an admin page Django refused without a text, it is
the page's view permission (``/admin/<app>/<model>/...`` -> ``<app>.view_<model>``). Under
``/api/`` the answer stays JSON in the API's error format.
"""

from __future__ import annotations

import re

from django.contrib.auth.models import Permission
from django.http import JsonResponse
from django.shortcuts import render

from apps.backoffice.roles import roles_holding
from starmall import messages
from starmall.api.middleware import API_PREFIX

_PERMISSION_TEXT = re.compile(r"\b([a-z_]+)\.([a-z_]+)\b")
_ADMIN_MODEL_PATH = re.compile(r"^/admin/([a-z_]+)/([a-z0-9_]+)/")


def missing_permission(request, exception) -> str | None:
    """ "app_label.codename" the refusal names, or the admin page's view permission; ``None`` if neither."""
    found = _PERMISSION_TEXT.search(str(exception or ""))
    if found:
        return found.group(0)
    page = _ADMIN_MODEL_PATH.match(request.path)
    if page:
        return f"{page.group(1)}.view_{page.group(2)}"
    return None


def permission_label(permission: str) -> str:
    """The permission's Chinese name ("可以给待支付订单改价…"), or ``permission`` itself if unknown."""
    app_label, _, codename = permission.partition(".")
    row = Permission.objects.filter(content_type__app_label=app_label, codename=codename).first()
    return row.name if row else permission


def permission_denied(request, exception=None):
    """403: what is missing and who has it (HTML), or ``{"code": "forbidden", "message"}`` under /api/."""
    if request.path.startswith(API_PREFIX):
        return JsonResponse({"code": "forbidden", "message": messages.FORBIDDEN}, status=403)
    permission = missing_permission(request, exception)
    context = {"permission": permission, "label": None, "roles": []}
    if permission:
        context.update(label=permission_label(permission), roles=roles_holding(permission))
    return render(request, "403.html", context, status=403)
