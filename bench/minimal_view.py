"""The floor: the bare-SQL sale in the smallest Django app (docs/PERFORMANCE.md).

``gunicorn -c starmall/gunicorn_conf.py bench.minimal_view:application`` with
``MINIMAL_DATABASE_URL`` set. One ``csrf_exempt`` view runs the flash-sale statement in
``transaction.atomic()``; no middleware, no DRF, no Redis, only PostgreSQL with persistent
connections. It is served exactly as the shop's HTTP is (``starmall/asgi.py``): Django's WSGI
handler in a2wsgi's pool of ``WEB_THREADS`` threads under uvicorn's worker class.
``bench_shop.py`` measures it next to the API so the report can say how far the shop is from
what Django's request cycle allows on this machine.
"""

import json
import os
import urllib.parse

import django
from django.conf import settings

_url = urllib.parse.urlsplit(os.environ["MINIMAL_DATABASE_URL"])
settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
    DATABASES={
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "NAME": _url.path.lstrip("/"),
            "USER": urllib.parse.unquote(_url.username or "postgres"),
            "PASSWORD": urllib.parse.unquote(_url.password or ""),
            "HOST": _url.hostname or "127.0.0.1",
            "PORT": str(_url.port or 5432),
            "CONN_MAX_AGE": 60,
        }
    },
)
django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.db import connection, transaction  # noqa: E402
from django.http import HttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import csrf_exempt  # noqa: E402


@csrf_exempt
def buy(request):
    customer = json.loads(request.body or b"{}").get("customer", 0)
    with transaction.atomic(), connection.cursor() as cursor:
        cursor.execute(
            "WITH u AS (UPDATE bench_sql_sku SET stock = stock - 1 WHERE id = 1 AND stock >= 1 RETURNING id)"
            " INSERT INTO bench_sql_order (sku_id, customer) SELECT id, %s FROM u RETURNING id",
            [customer],
        )
        won = cursor.fetchone() is not None
    return HttpResponse(json.dumps({"won": won}), content_type="application/json", status=201 if won else 409)


urlpatterns = [path("buy", buy), path("health", lambda request: HttpResponse("ok"))]
from a2wsgi import WSGIMiddleware  # noqa: E402

application = WSGIMiddleware(get_wsgi_application(), workers=int(os.environ.get("WEB_THREADS", "4")))
