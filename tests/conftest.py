"""Fixtures shared by the whole suite.

Runs on embedded defaults (SQLite in memory, the suite's own embedded Redis at
var/test-redis-<run id>.sock) or on PostgreSQL/Redis when DATABASE_URL / REDIS_URL are set. A WeChat
sandbox runs in a thread for the whole session; each test starts with it reset and with
settings pointing wechatpy at it.
"""

from __future__ import annotations

import datetime as dt
import itertools
import os
import threading
import weakref
from collections.abc import Callable

import pytest
from django.conf import settings as django_settings
from django.db import connection

# Imported for its side effect: it names this run's embedded Redis (and queues, keys,
# test database) in the environment, before pytest_configure starts that Redis.
import starmall.settings.test  # noqa: E402,F401
from starmall import embedded_redis
from wechat_sandbox.config import SandboxConfig
from wechat_sandbox.server import SandboxServer

_started_redis = False


def pytest_configure(config):
    global _started_redis
    if not os.environ.get("REDIS_URL") and not embedded_redis.is_running():
        embedded_redis.ensure_running()
        _started_redis = True


def pytest_unconfigure(config):
    if _started_redis:
        embedded_redis.stop()
        for suffix in (".sock", ".pid", ".rdb", ".log"):
            embedded_redis.socket_path().with_suffix(suffix).unlink(missing_ok=True)


def pytest_collection_modifyitems(config, items):
    """Tests marked ``postgres`` skip on SQLite — unless CI demands PostgreSQL, then they fail."""
    if os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://")):
        return
    if os.environ.get("STARMALL_REQUIRE_POSTGRES"):
        raise pytest.UsageError("STARMALL_REQUIRE_POSTGRES is set but DATABASE_URL is not PostgreSQL")
    skip = pytest.mark.skip(reason="needs PostgreSQL (set DATABASE_URL=postgres://...)")
    for item in items:
        if "postgres" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def wechat_sandbox_server():
    """A WeChat sandbox on a free port, with the shop's credentials; notifications manual."""
    config = SandboxConfig.from_env(
        {},
        appid=django_settings.WECHAT_APPID,
        app_secret=django_settings.WECHAT_APP_SECRET,
        mch_id=django_settings.WECHAT_MCH_ID,
        api_key=django_settings.WECHAT_PAY_API_KEY,
    )
    server = SandboxServer(config=config, auto_notify=False)
    server.start()
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def wechat(wechat_sandbox_server, settings):
    """The sandbox, reset, with the shop's WeChat base URLs pointed at it."""
    wechat_sandbox_server.state.reset()
    settings.WECHAT_API_BASE = wechat_sandbox_server.url
    settings.WECHAT_PAY_API_BASE = wechat_sandbox_server.url
    settings.LOGISTICS_API_BASE = wechat_sandbox_server.url  # its tracking sandbox (logistics.py)
    settings.ALERT_WECOM_WEBHOOK_URL = (  # its enterprise-WeChat group robot (robot.py)
        f"{wechat_sandbox_server.url}cgi-bin/webhook/send?key={wechat_sandbox_server.config.robot_key}"
    )
    return wechat_sandbox_server


@pytest.fixture(autouse=True)
def _fresh_channel_layer():
    """Each test gets its own channel layer instance. A layer remembers the event loop of a
    receive() in progress; a consumer left receiving when an earlier test's loop closed (a
    WebSocket test under load, the chat end-to-end server's thread) made the next test's
    receive() fail with "Two event loops are trying to receive() on one channel layer at
    once". In the shop each process has one loop, so this is the tests' own isolation."""
    from channels.layers import channel_layers

    channel_layers.backends.clear()
    yield
    channel_layers.backends.clear()


_ORDER_THREADS: weakref.WeakSet = weakref.WeakSet()


@pytest.fixture(scope="session", autouse=True)
def _order_threads_tracked():
    """Remember every gate's order threads (``starmall.gates.threads.OrderThreads``)."""
    from starmall.gates.threads import OrderThreads

    init = OrderThreads.__init__

    def tracked(self, *args, **kwargs):
        init(self, *args, **kwargs)
        _ORDER_THREADS.add(self)

    OrderThreads.__init__ = tracked
    yield
    OrderThreads.__init__ = init


@pytest.fixture(autouse=True)
def _order_threads_closed(_order_threads_tracked):
    """After each test, close the order threads a gate it made left running, as a worker closes
    them at its end: their database connections (named ``starmall-create-gate``) would
    otherwise outlive the test and hold its database."""
    import asyncio

    yield
    for threads in list(_ORDER_THREADS):
        if threads._executor is not None:
            asyncio.run(threads.close())


@pytest.fixture(autouse=True)
def _broker_not_paused():
    """Each test starts with pushes allowed (starmall.dispatch pauses after a broker failure),
    and with the notify gate's markers written (apps.payments.notify_duplicates pauses too)."""
    from apps.payments import notify_duplicates
    from starmall import dispatch

    dispatch.resume()
    notify_duplicates.resume()


@pytest.fixture(autouse=True)
def _clean_redis():
    """Forget the suite's Redis keys (cache, tokens, drafts, test queues, WeChat's access token) around each test."""
    from django_redis import get_redis_connection

    r = get_redis_connection("default")

    def clean():
        keys = list(r.scan_iter(f"{django_settings.CACHES['default']['KEY_PREFIX']}:*", count=1000))
        keys += [q for q in queue_names()]
        keys += list(r.scan_iter("wechatpy*", count=1000))  # the access token: the reset sandbox forgot it
        if keys:
            r.delete(*keys)

    clean()
    yield
    clean()


@pytest.fixture(autouse=True)
def _process_memory_forgotten():
    """What a process remembers of the database (the print-on-payment answer) is forgotten around
    each test: the rolled-back test database sends no signal that would."""
    from apps.printing import selectors

    selectors.print_on_payment_cache_clear_now()
    yield
    selectors.print_on_payment_cache_clear_now()


def queue_names() -> list[str]:
    routes = django_settings.CELERY_TASK_ROUTES
    return [django_settings.CELERY_TASK_DEFAULT_QUEUE] + sorted({r["queue"] for r in routes.values()})


@pytest.fixture
def queued():
    """``queued(name)``: the task names waiting on a Celery queue (a Redis list), oldest first."""
    import json

    from django_redis import get_redis_connection

    r = get_redis_connection("default")

    def read(queue: str) -> list[str]:
        name = next(q for q in queue_names() if q == queue or q.endswith("-" + queue))
        return [json.loads(m)["headers"]["task"] for m in reversed(r.lrange(name, 0, -1))]

    return read


@pytest.fixture
def redis_pipelines(monkeypatch) -> list[int]:
    """The number of commands in each pipeline the asyncio Redis client sends, in order (the
    gates' batches: tests/test_gate_script_batch.py, tests/payments/test_notify_gate.py)."""
    import redis.asyncio as aioredis

    sent: list[int] = []
    execute = aioredis.client.Pipeline.execute

    async def counting(self, raise_on_error: bool = True):
        sent.append(len(self.command_stack))
        return await execute(self, raise_on_error)

    monkeypatch.setattr(aioredis.client.Pipeline, "execute", counting)
    return sent


@pytest.fixture
def is_postgres() -> bool:
    return connection.vendor == "postgresql"


# --- shop objects -------------------------------------------------------------------------

_DB_FIXTURES = {"db", "transactional_db", "django_db_reset_sequences", "django_db_serialized_rollback"}


@pytest.fixture(autouse=True)
def freight_default(request):
    """The shop's default freight template, exactly as the data migration seeds it (by piece:
    the first piece 1000 fen, further pieces 0, free everywhere from 9900 fen of goods), for
    every test that uses the database — a transactional test's flush removes migrated rows.
    Tests compute expected freight from it: ``freight_default.first_fee_fen``. None without db.
    """
    if not (_DB_FIXTURES & set(request.fixturenames) or request.node.get_closest_marker("django_db")):
        return None
    import importlib

    from apps.shipping.models import FreeShippingRule, FreightTemplate

    request.getfixturevalue("_django_db_helper")  # what db / the django_db marker set up
    seed = importlib.import_module("apps.shipping.migrations.0002_default_template")
    template = FreightTemplate.objects.filter(is_default=True).first()
    if template is None:
        template = FreightTemplate.objects.create(is_default=True, **seed.DEFAULT)
        FreeShippingRule.objects.create(template=template, provinces=[], cities=[], min_amount_fen=seed.FREE_FROM_FEN)
    return template


@pytest.fixture
def make_customer(db):
    """``make_customer(balance_fen=0, points=0, openid=None)`` -> Customer."""
    import itertools

    from apps.accounts.models import Customer

    counter = itertools.count(1)

    def make(*, balance_fen: int = 0, points: int = 0, openid: str | None = None) -> Customer:
        n = next(counter)
        return Customer.objects.create(
            openid=openid or f"oTestCustomer{n:015d}",
            nickname=f"顾客{n}",
            balance_fen=balance_fen,
            points=points,
        )

    return make


@pytest.fixture
def customer(make_customer):
    return make_customer()


@pytest.fixture
def make_api():
    """``make_api(customer)`` -> DRF APIClient sending that customer's bearer token."""
    from rest_framework.test import APIClient

    from apps.accounts.tokens import token_issue

    def make(customer=None) -> APIClient:
        client = APIClient()
        if customer is not None:
            client.credentials(HTTP_AUTHORIZATION=f"Bearer {token_issue(customer_id=customer.pk)}")
        return client

    return make


@pytest.fixture
def api(make_api, customer):
    return make_api(customer)


@pytest.fixture
def make_upload(db):
    """``make_upload(customer, what="png")`` -> the absolute URL of a file ``upload_store`` stored
    for that customer (an ``Upload`` row): ``"png"`` a 10x10 picture, ``"mp3"``/``"aac"``/``"m4a"``
    a 2-second voice from ``tests/files/data`` (real audio: see tests/files/conftest.py)."""
    import io
    from pathlib import Path

    from django.core.files.uploadedfile import SimpleUploadedFile
    from PIL import Image

    from apps.files import services

    def make(customer, what: str = "png") -> str:
        if what == "png":
            out = io.BytesIO()
            Image.new("RGB", (10, 10), (0, 128, 0)).save(out, format="PNG")
            data = out.getvalue()
        else:
            data = (Path(__file__).parent / "files" / "data" / f"voice.{what}").read_bytes()
        upload = services.upload_store(file=SimpleUploadedFile(f"x.{what}", data), uploader_id=customer.pk)
        return services.media_url(upload.name)

    return make


@pytest.fixture
def address_of(db):
    """``address_of(customer)`` -> a new default address of that customer (浙江省杭州市)."""
    from apps.accounts.models import Address

    def make(customer):
        return Address.objects.create(
            customer=customer,
            name="张三",
            phone="13800000000",
            province="浙江省",
            city="杭州市",
            district="西湖区",
            detail="文三路100号",
            is_default=True,
        )

    return make


@pytest.fixture
def address(customer, address_of):
    return address_of(customer)


@pytest.fixture
def make_sku(db):
    """``make_sku(price_fen=12800, stock=10, name="青瓷盖碗", specs=None)`` -> Sku of a goods product."""
    from apps.catalog.models import Category, Kind, Product, Sku

    def make(*, price_fen: int = 12800, stock: int = 10, name: str = "青瓷盖碗", specs=None) -> Sku:
        category, _ = Category.objects.get_or_create(name="茶器", defaults={"kind": Kind.GOODS})
        product = Product.objects.create(category=category, name=name, kind=Kind.GOODS)
        return Sku.objects.create(product=product, specs=specs or {"颜色": "天青"}, price_fen=price_fen, stock=stock)

    return make


@pytest.fixture
def make_flash_sale(make_sku):
    """``make_flash_sale(stock=5, limit=1, sku_stock=20, price_fen=9900, starts_in=-5)`` -> a 秒杀
    of a new SKU starting ``starts_in`` minutes from now (live by default) and lasting an hour,
    its card and quota loaded in Redis as beat prepares them."""
    from django.utils import timezone

    from apps.marketing import flash_quota
    from apps.marketing.models import FlashSale

    def make(
        *, stock: int = 5, limit: int = 1, sku_stock: int = 20, price_fen: int = 9900, starts_in: int = -5
    ) -> FlashSale:
        starts_at = timezone.now() + dt.timedelta(minutes=starts_in)
        sale = FlashSale.objects.create(
            title="限时秒杀",
            sku=make_sku(stock=sku_stock),
            price_fen=price_fen,
            stock=stock,
            limit_per_customer=limit,
            starts_at=starts_at,
            ends_at=starts_at + dt.timedelta(hours=1),
        )
        flash_quota.card_write(sale)
        flash_quota.quota_load(sale.pk)
        return sale

    return make


@pytest.fixture
def consultation(db):
    """A teacher with a consultation product (one SKU, 29900 fen) and slots for 8 days."""
    from apps.appointments.slots import slots_generate
    from apps.catalog.models import Category, Kind, Product, Sku, Teacher

    category = Category.objects.create(name="咨询预约", kind=Kind.CONSULTATION)
    product = Product.objects.create(category=category, name="命理咨询", kind=Kind.CONSULTATION)
    sku = Sku.objects.create(product=product, specs={"时长": "60分钟"}, price_fen=29900, stock=1000)
    teacher = Teacher.objects.create(name="李明远", title="国学讲师", product=product)
    slots_generate()

    class Consultation:
        pass

    c = Consultation()
    c.product, c.sku, c.teacher = product, sku, teacher
    # Only slots that can still be booked (BOOKING_MIN_NOTICE_MINUTES ahead), whatever the time of day.
    from apps.appointments.slots import booking_open_after

    c.slots = list(teacher.slots.filter(start__gt=booking_open_after()).order_by("start"))
    return c


@pytest.fixture
def hours_teacher(db):
    """A teacher with weekly hours (Mon-Fri 09:00-12:00 and 14:00-18:00, Sat 10:00-16:00),
    a 30- and a 60-minute service (SKUs 3000 and 6000 fen), buffer 15, step 30, no notice.
    ``.teacher``, ``.short``/``.long`` (products), ``.short_sku``/``.long_sku``, ``.monday``:
    the next Monday at least a day away (Shanghai date)."""
    import datetime as dt

    from django.utils import timezone

    from apps.appointments.models import Service, TeacherRules, WeeklyHours
    from apps.catalog.models import Category, Kind, Product, Sku, Teacher

    category = Category.objects.create(name="咨询", kind=Kind.CONSULTATION)
    teacher = Teacher.objects.create(name="王")
    made = {}
    for minutes in (30, 60):
        product = Product.objects.create(category=category, name=f"{minutes}分钟", kind=Kind.CONSULTATION)
        made[minutes] = (product, Sku.objects.create(product=product, price_fen=100 * minutes, stock=1000))
        Service.objects.create(teacher=teacher, product=product, duration_minutes=minutes, sort=minutes)
    teacher.product = made[30][0]
    teacher.save()
    for weekday in range(1, 6):
        WeeklyHours.objects.create(teacher=teacher, weekday=weekday, windows=[["09:00", "12:00"], ["14:00", "18:00"]])
    WeeklyHours.objects.create(teacher=teacher, weekday=6, windows=[["10:00", "16:00"]])
    TeacherRules.objects.create(teacher=teacher, buffer_minutes=15, step_minutes=30, min_notice_minutes=0)
    monday = timezone.localdate() + dt.timedelta(days=1)
    while monday.isoweekday() != 1:
        monday += dt.timedelta(days=1)

    class HoursTeacher:
        pass

    h = HoursTeacher()
    h.teacher, h.monday = teacher, monday
    (h.short, h.short_sku), (h.long, h.long_sku) = made[30], made[60]
    h.at = lambda hour, minute=0, day=monday: dt.datetime.combine(
        day, dt.time(hour, minute), tzinfo=timezone.get_current_timezone()
    )

    def book(product, start, end, order_no, customer):
        """The booking write itself (``bookings.booking_create``) for ``product`` (``h.short``/``h.long``)."""
        from apps.appointments import bookings

        return bookings.booking_create(
            teacher_id=teacher.pk,
            product_id=product.pk,
            start=start,
            end=end,
            order_no=order_no,
            customer_id=customer.pk,
        )

    h.book = book
    return h


@pytest.fixture
def deliver(wechat, django_capture_on_commit_callbacks):
    """``deliver()``: the sandbox sends its pending notifications through Django's test client.

    ``on_commit`` callbacks run as after a real commit. Returns the attempts (each with ``ok``,
    ``status``, ``response``), as the sandbox records them.
    """
    from urllib.parse import urlparse

    from django.test import Client

    client = Client()

    def transport(url: str, body: bytes) -> tuple[int, str]:
        with django_capture_on_commit_callbacks(execute=True):
            response = client.post(urlparse(url).path, data=body, content_type="text/xml")
        return response.status_code, response.content.decode()

    def run(notification_id: int | None = None) -> list[dict]:
        if notification_id is not None:
            return wechat.state.resend(notification_id, transport)
        return wechat.deliver_pending(transport)

    return run


@pytest.fixture
def place_order():
    """``place_order(api, items=[(sku, qty)], address=None, slot=None)`` -> order JSON (unpaid)."""

    def place(api, *, items, address=None, slot=None, **extra):
        body = {"items": [{"sku_id": sku.pk, "quantity": qty} for sku, qty in items], **extra}
        if address is not None:
            body["address_id"] = address.pk
        if slot is not None:
            body["slot_id"] = slot.pk
        confirmed = api.post("/api/v1/orders/confirm", body, format="json")
        assert confirmed.status_code == 200, confirmed.json()
        created = api.post("/api/v1/orders", {"order_key": confirmed.json()["order_key"]}, format="json")
        assert created.status_code == 201, created.json()
        return created.json()

    return place


# --- races (tests/concurrency, tests/faults) ------------------------------------------------


@pytest.fixture
def race():
    """``race(fn, n)``: call ``fn(i)`` in n real threads released together by a Barrier."""
    return _race


def _race(fn: Callable[[int], object], n: int, timeout: float = 30) -> list[object]:
    """Call ``fn(i)`` for i in 0..n-1 at the same moment; return results or raised exceptions."""
    barrier = threading.Barrier(n)
    results: list[object] = [None] * n

    def worker(i: int) -> None:
        try:
            barrier.wait(timeout)
            results[i] = fn(i)
        except BaseException as exc:  # noqa: BLE001 - the test inspects what each thread raised
            results[i] = exc
        finally:
            connection.close()  # each thread has its own connection

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout)
    assert not any(t.is_alive() for t in threads), "a racing thread hung"
    return results


# --- a worker that dies right after a provider answered ----------------------------------------


class WorkerKilled(BaseException):
    """What :func:`die_after_answer` raises: not an ``Exception``, so no handler records it."""


@pytest.fixture
def die_after_answer():
    """``with die_after_answer(answered) as death: run()`` — the worker dies right after the
    provider answered a send.

    ``answered()`` tells, without the database, whether the provider has accepted the send (the
    sandbox recorded the message, the SMS backend logged it). The first database statement the
    worker completes after that is its last: :class:`WorkerKilled` is raised as that statement
    returns, as if the process were killed then — what the statement committed stays, the rest
    of its transaction rolls back, nothing after it runs. So a send recorded by the first
    statement after the answer counts once; one recorded later (at a COMMIT, after more work)
    is sent again by the next attempt. ``death.killed`` says whether the kill happened.
    """
    from contextlib import contextmanager
    from types import SimpleNamespace

    @contextmanager
    def die(answered: Callable[[], bool]):
        death = SimpleNamespace(killed=False)

        def last_statement(execute, sql, params, many, context):
            result = execute(sql, params, many, context)
            if answered():
                death.killed = True
                raise WorkerKilled(sql)
            return result

        try:
            with connection.execute_wrapper(last_statement):
                yield death
        except WorkerKilled:
            pass

    return die


@pytest.fixture
def media(settings, tmp_path):
    """Each test stores its uploads (and copied pictures) in its own folder; returns it. Tests
    that store files say ``pytest.mark.usefixtures("media")``."""
    settings.MEDIA_ROOT = str(tmp_path / "media")
    return tmp_path / "media"


@pytest.fixture
def buyer(make_customer, make_api, wechat):
    """A customer with 10,000.00 yuan balance, known to the WeChat sandbox, with a default
    address (so ``place_order`` needs none): ``buyer.customer``, ``buyer.api``."""
    from types import SimpleNamespace

    from apps.accounts.models import Address

    customer = make_customer(balance_fen=1_000_000)
    wechat.state.upsert_user(customer.openid)
    Address.objects.create(
        customer=customer,
        name="张三",
        phone="13800001234",
        province="浙江省",
        city="杭州市",
        district="西湖区",
        detail="文三路100号",
        is_default=True,
    )
    return SimpleNamespace(customer=customer, api=make_api(customer))


@pytest.fixture
def paid(buyer, make_sku, place_order):
    """``paid(price_fen=5000, stock=10, quantity=2, sku=None)`` -> (order JSON, sku): a goods
    order of ``buyer``'s, paid from the balance."""

    def make(*, price_fen=5000, stock=10, quantity=2, sku=None):
        sku = sku or make_sku(price_fen=price_fen, stock=stock)
        order = place_order(buyer.api, items=[(sku, quantity)])
        response = buyer.api.post(f"/api/v1/orders/{order['order_no']}/pay", {"method": "balance"}, format="json")
        assert response.status_code == 200, response.json()
        return response.json()["order"], sku

    return make


@pytest.fixture
def requested_refund(buyer, paid):
    """``requested_refund(amount_fen)`` -> an AfterSale (``requested``) of that amount on a paid
    300.00 yuan goods order of ``buyer``'s (the money-limit tests)."""
    from apps.orders.models import AfterSale

    def make(amount_fen: int):
        order, _ = paid(price_fen=30000, quantity=1)
        response = buyer.api.post(
            f"/api/v1/orders/{order['order_no']}/refund",
            {"reason": "不想要了", "amount_fen": amount_fen},
            format="json",
        )
        assert response.status_code == 202, response.json()
        return AfterSale.objects.get(refund_no=response.json()["refund_no"])

    return make


@pytest.fixture
def safe_api(make_api):
    """``safe_api(customer=None)``: an APIClient that answers a 500 instead of raising it (what
    a mini-program sees)."""

    def make(customer=None):
        client = make_api(customer)
        client.raise_request_exception = False
        return client

    return make


@pytest.fixture
def boss(client, django_user_model):
    """pytest-django's ``client``, logged in as the superuser "boss" (every back-office page)."""
    client.force_login(django_user_model.objects.create_superuser("boss", password="pw-123456"))
    return client


@pytest.fixture
def role_client(django_user_model):
    """``role_client("财务")`` -> a new logged-in Client of a staff user in that role (group of
    ``apps/backoffice/roles.py``, made if missing); ``client.user`` is the user."""
    import itertools

    from django.contrib.auth.models import Group, Permission
    from django.test import Client

    from apps.backoffice.roles import sync_roles

    counter = itertools.count(1)

    def make(role: str) -> Client:
        sync_roles(Group, Permission)
        user = django_user_model.objects.create_user(
            f"user-{role}-{next(counter)}", password="pw-123456", is_staff=True
        )
        user.groups.add(Group.objects.get(name=role))
        client = Client()
        client.force_login(user)
        client.user = user
        return client

    return make


# --- a teacher with weekly hours (tests/appointments, tests/backoffice) -----------------------

_hours_order_numbers = itertools.count(1)


@pytest.fixture
def waitlist_teacher(db):
    """A teacher working 09:00–10:00 every day, one 60-minute service (one start a day),
    no minimum notice: ``.teacher``, ``.product``, ``.day`` (the day after tomorrow),
    ``.start(day)`` (09:00 that day), ``.book(customer, day)`` -> Booking."""
    from django.utils import timezone

    from apps.appointments import bookings
    from apps.appointments.models import Service, TeacherRules, WeeklyHours
    from apps.catalog.models import Category, Kind, Product, Teacher

    category = Category.objects.create(name="咨询", kind=Kind.CONSULTATION)
    product = Product.objects.create(category=category, name="一小时咨询", kind=Kind.CONSULTATION)
    teacher = Teacher.objects.create(name="周清和", title="讲师", product=product)
    Service.objects.create(teacher=teacher, product=product, duration_minutes=60)
    TeacherRules.objects.create(teacher=teacher, min_notice_minutes=0, step_minutes=30)
    for weekday in range(1, 8):
        WeeklyHours.objects.create(teacher=teacher, weekday=weekday, windows=[["09:00", "10:00"]])

    class HoursTeacher:
        pass

    h = HoursTeacher()
    h.teacher, h.product = teacher, product
    h.day = timezone.localdate() + dt.timedelta(days=2)

    def start(day: dt.date) -> dt.datetime:
        return dt.datetime.combine(day, dt.time(9), tzinfo=timezone.get_current_timezone())

    def book(customer, day: dt.date | None = None):
        begin = start(day or h.day)
        return bookings.booking_create(
            teacher_id=teacher.pk,
            product_id=product.pk,
            start=begin,
            end=begin + dt.timedelta(hours=1),
            order_no=f"SM{next(_hours_order_numbers):020d}",
            customer_id=customer.pk,
        )

    h.start, h.book = start, book
    return h
