"""Top-level URLs: the front page, the mini-program API under /api/v1/, admin, schema, health."""

from django.conf import settings
from django.contrib import admin
from django.urls import include, path, re_path
from django.views.static import serve
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView

from starmall.api import converters  # noqa: F401 - registers the path converters first
from starmall.api.health import api_not_found, healthz
from starmall.pages import favicon, home

api_v1 = [
    path("", include("apps.files.api.urls")),
    path("", include("apps.accounts.api.urls")),
    path("", include("apps.catalog.api.urls")),
    path("", include("apps.members.api.urls")),
    path("", include("apps.appointments.api.urls")),
    path("", include("apps.marketing.api.urls")),
    path("", include("apps.orders.api.urls")),
    path("", include("apps.payments.api.urls")),
    path("", include("apps.almanac.api.urls")),
    path("", include("apps.reviews.api.urls")),
    path("", include("apps.chat.api.urls")),
    path("", include("apps.content.api.urls")),
    path("", include("apps.stores.api.urls")),
    path("", include("apps.distribution.api.urls")),
    path("", include("apps.points_mall.api.urls")),
    # Anything else under /api/v1/ is a JSON 404 in the API's error format (also with DEBUG on).
    re_path(r"^[\s\S]*$", api_not_found),  # any path, also one with a newline in it
]

urlpatterns = [
    path("", home, name="home"),
    path("healthz", healthz, name="healthz"),
    path("favicon.ico", favicon, name="favicon"),
    path("api/v1/", include(api_v1)),
    path("api/schema/", SpectacularAPIView.as_view(), name="schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="schema"), name="docs"),
    re_path(r"^api/[\s\S]*$", api_not_found),  # any other path under /api/: the API's JSON 404 too
    path("admin/", admin.site.urls),
    path("", include("apps.wechat_official.urls")),  # /wechat/official: WeChat's official-account server
]
if settings.MEDIA_SERVE and settings.MEDIA_URL.startswith("/"):  # development; nginx in production

    def media(request, path):
        """Uploads and demo pictures from MEDIA_ROOT (read per request)."""
        return serve(request, path, document_root=settings.MEDIA_ROOT)

    urlpatterns.append(re_path(r"^" + settings.MEDIA_URL.strip("/") + r"/(?P<path>.*)$", media))

# A Chinese 403 naming the missing permission and the roles that hold it (JSON under /api/).
handler403 = "apps.backoffice.views_denied.permission_denied"
