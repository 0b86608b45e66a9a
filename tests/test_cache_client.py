"""One redis-py client per Redis server per process (``starmall.cache_client``)."""

import contextvars
import threading

from django.core.cache import caches


def _client_in_new_context():
    """What a request served under ASGI sees: a fresh context, so a fresh cache object."""
    return contextvars.Context().run(lambda: (caches["default"], caches["default"].client.get_client()))


def test_every_request_context_and_thread_shares_the_processs_redis_client():
    first_cache, first = _client_in_new_context()
    second_cache, second = _client_in_new_context()
    assert first_cache is not second_cache  # Django did build a cache object per context ...
    assert first is second  # ... and they share one redis-py client
    from_thread = []
    thread = threading.Thread(target=lambda: from_thread.append(_client_in_new_context()[1]))
    thread.start()
    thread.join()
    assert from_thread == [first]


def test_the_shared_client_works_from_each_context():
    contextvars.Context().run(lambda: caches["default"].set("shared-client-probe", 41))
    assert contextvars.Context().run(lambda: caches["default"].incr("shared-client-probe")) == 42


def test_another_server_gets_its_own_client(settings):
    own = caches["default"].client.get_client()
    settings.CACHES = {
        **settings.CACHES,
        "default": {**settings.CACHES["default"], "LOCATION": "redis://127.0.0.1:9/0"},
    }
    other = caches["default"].client.get_client()
    assert other is not own
    assert other.connection_pool.connection_kwargs["port"] == 9


def test_make_key_is_the_caches_own_key_from_every_context_with_one_cache_object():
    from django.core.cache import cache

    from starmall import cache_client

    for key in ("payments:notify:applied:2026", "flash:7:quota", "auth:customer:1:tokens"):
        assert cache_client.make_key(key) == cache.make_key(key)
    made = [contextvars.Context().run(cache_client.default) for _ in range(3)]
    assert made[0] is made[1] is made[2]  # not one per request context, as `cache` builds


def test_make_key_follows_replaced_cache_settings(settings):
    from starmall import cache_client

    before = cache_client.make_key("k")
    settings.CACHES = {"default": {**settings.CACHES["default"], "KEY_PREFIX": "another-shop"}}
    assert cache_client.make_key("k") == "another-shop:1:k" != before
