"""``REDIS_URL`` as a Redis Sentinel group (starmall/redis_urls.py): parsed into each client's
own settings, and each client — the cache, the Celery broker, the chat's channel layer — talks
through a real sentinel (``redis-server --sentinel``) to the master it names."""

from __future__ import annotations

import subprocess

import pytest
from fault_helpers import PrivateRedis, free_port, wait_for

from starmall import redis_urls


def test_plain_redis_urls_are_passed_as_they_are():
    url = "redis://:pw@10.0.0.5:6379/1"
    assert redis_urls.parse(url) is None
    assert redis_urls.cache_settings(url) == (url, {})
    assert redis_urls.broker_settings(url) == (url, {})
    assert redis_urls.channel_layer_host(url) == {"address": url}
    assert redis_urls.redbeat_settings(url) == (url, {})


def test_a_sentinel_url_becomes_each_clients_form():
    url = "sentinel://:s%40cret@10.0.0.1:26379,10.0.0.2:26380/shop-master/3?sentinel_password=sp"
    group = redis_urls.parse(url)
    assert (group.sentinels, group.master, group.db, group.password, group.sentinel_password) == (
        [("10.0.0.1", 26379), ("10.0.0.2", 26380)],
        "shop-master",
        3,
        "s@cret",
        "sp",
    )
    location, options = redis_urls.cache_settings(url)
    assert location == "redis://shop-master/3"
    assert options["SENTINELS"] == [("10.0.0.1", 26379), ("10.0.0.2", 26380)] and options["PASSWORD"] == "s@cret"
    assert options["SENTINEL_KWARGS"] == {"password": "sp"}
    assert options["CONNECTION_FACTORY"] == "django_redis.pool.SentinelConnectionFactory"
    broker, transport = redis_urls.broker_settings(url)
    assert broker == "sentinel://:s%40cret@10.0.0.1:26379/3;sentinel://:s%40cret@10.0.0.2:26380/3"
    assert transport == {"master_name": "shop-master", "sentinel_kwargs": {"password": "sp"}}
    assert redis_urls.channel_layer_host(url) == {
        "master_name": "shop-master",
        "sentinels": [("10.0.0.1", 26379), ("10.0.0.2", 26380)],
        "db": 3,
        "password": "s@cret",
        "sentinel_kwargs": {"password": "sp"},
    }
    assert redis_urls.redbeat_settings(url) == (
        "redis-sentinel://",
        {
            "sentinels": [("10.0.0.1", 26379), ("10.0.0.2", 26380)],
            "service_name": "shop-master",
            "db": 3,
            "password": "s@cret",
            "sentinel_kwargs": {"password": "sp"},
        },
    )
    assert redis_urls.parse("sentinel://h1:26379/mymaster").db == 0


@pytest.mark.parametrize(
    "url, message",
    [
        ("sentinel://h1:26379", "ends in /<master name>"),
        ("sentinel://h1/mymaster", "is not host:port"),
        ("sentinel://h1:26379/mymaster/x", "is not a number"),
    ],
)
def test_a_malformed_sentinel_url_is_refused(url, message):
    with pytest.raises(ValueError, match=message):
        redis_urls.parse(url)


@pytest.fixture
def sentinel(tmp_path):
    """A private Redis (the master) and one sentinel monitoring it as ``shop``; -> (master, url)."""
    master = PrivateRedis(tmp_path)
    master.start()
    port = free_port()
    conf = tmp_path / "sentinel.conf"
    conf.write_text(f"port {port}\nbind 127.0.0.1\ndir {tmp_path}\nsentinel monitor shop 127.0.0.1 {master.port} 1\n")
    process = subprocess.Popen(
        [master.executable, str(conf), "--sentinel"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        import redis

        probe = redis.Redis(host="127.0.0.1", port=port, socket_timeout=1)

        def knows_master():
            assert process.poll() is None
            try:
                return probe.sentinel_get_master_addr_by_name("shop")
            except redis.RedisError:
                return None

        wait_for(knows_master, timeout=20, what="the sentinel")
        yield master, f"sentinel://127.0.0.1:{port}/shop/0"
    finally:
        process.terminate()
        process.wait(10)
        master.stop()


def test_cache_broker_and_channel_layer_reach_the_master_through_a_real_sentinel(sentinel, settings):
    from asgiref.sync import async_to_sync
    from channels_redis.core import RedisChannelLayer
    from django.core.cache import caches
    from kombu import Connection

    master, url = sentinel
    location, options = redis_urls.cache_settings(url)
    settings.CACHES = {
        **settings.CACHES,
        "sentinel": {
            **settings.CACHES["default"],
            "LOCATION": location,
            "OPTIONS": {**settings.CACHES["default"]["OPTIONS"], **options},
            "KEY_PREFIX": "sentinel-test",
        },
    }
    cache = caches["sentinel"]
    cache.set("greeting", "你好", timeout=30)
    assert cache.get("greeting") == "你好"
    assert master.client().exists("sentinel-test:1:greeting") == 1  # it is in the master

    broker, transport = redis_urls.broker_settings(url)
    with Connection(broker, transport_options=transport) as conn:
        queue = conn.SimpleQueue("sentinel-test-queue")
        queue.put({"n": 1})
        assert master.client().llen("sentinel-test-queue") == 1
        message = queue.get(timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
        queue.close()

    layer = RedisChannelLayer(hosts=[redis_urls.channel_layer_host(url)], prefix="sentinel-test")

    async def round_trip():
        channel = await layer.new_channel()
        await layer.send(channel, {"type": "chat.message", "text": "到了"})
        received = await layer.receive(channel)
        await layer.flush()
        await layer.close_pools()
        return received

    assert async_to_sync(round_trip)() == {"type": "chat.message", "text": "到了"}


def test_a_dead_workers_message_comes_back_after_minutes_not_an_hour():
    """The broker's visibility timeout (BROKER_VISIBILITY_TIMEOUT_SECONDS, default 5 minutes):
    what the Celery app uses, equal to the follow-ups' lease so a message given back finds its
    row free, and set from the environment."""
    import os
    import sys

    from apps.orders.models import FollowUp
    from starmall.celery import app

    assert app.conf.broker_transport_options["visibility_timeout"] == 300 == FollowUp.LEASE_SECONDS
    code = (
        "import django, os; os.environ['DJANGO_SETTINGS_MODULE']='starmall.settings.test'; django.setup(); "
        "from starmall.celery import app; print(app.conf.broker_transport_options['visibility_timeout'])"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "BROKER_VISIBILITY_TIMEOUT_SECONDS": "120"},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.stdout.strip().splitlines()[-1] == "120", result.stderr[-2000:]


def test_a_unix_socket_url_reaches_the_same_redis_from_the_broker():
    """``REDIS_URL=unix://...`` (redis-py's form) becomes kombu's ``redis+socket://`` for the
    broker, password and database kept: a message put through it lands in that database."""
    import shutil
    import tempfile
    from pathlib import Path

    from kombu import Connection

    folder = tempfile.mkdtemp(dir="/tmp")  # a socket's path has to be short
    sock = f"{folder}/r.sock"
    server = PrivateRedis(Path(folder), unix_socket=sock, password="p@ss")
    try:
        server.start()
        client = server.client(db=2)
        url = f"unix://:p%40ss@{sock}?db=2"
        broker, transport = redis_urls.broker_settings(url)
        assert (broker, transport) == (f"redis+socket://:p%40ss@{sock}?virtual_host=2", {})
        with Connection(broker) as conn:
            queue = conn.SimpleQueue("socket-test-queue")
            queue.put({"n": 1})
            assert client.llen("socket-test-queue") == 1
            assert queue.get(timeout=5).payload == {"n": 1}
            queue.close()
    finally:
        server.stop()
        shutil.rmtree(folder, ignore_errors=True)
