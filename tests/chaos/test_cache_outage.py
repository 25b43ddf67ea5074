"""The cache on a stopped Redis: reads miss and writes are skipped, at once, instead of failing
the request (API throttling keeps its budgets there)."""

from __future__ import annotations

import time

import pytest
from redis.exceptions import ConnectionError as RedisConnectionError

from portal.cache import FailOpenRedisCache

pytestmark = pytest.mark.chaos


def test_the_cache_fails_open_while_redis_is_down(private_redis, settings):
    options = settings.CACHES["default"].get("OPTIONS", {})
    assert settings.CACHES["default"]["BACKEND"] == "portal.cache.FailOpenRedisCache"
    cache = FailOpenRedisCache(private_redis.url, {"OPTIONS": options})
    cache.set("budget", [1.0, 2.0])
    assert cache.get("budget") == [1.0, 2.0]

    private_redis.stop()
    started = time.monotonic()
    assert cache.get("budget", "miss") == "miss"
    cache.set("budget", [3.0])
    assert cache.add("other", 1) is False
    assert cache.get_many(["budget", "other"]) == {}
    assert cache.delete("budget") is False
    assert time.monotonic() - started < 1.0
    with pytest.raises(RedisConnectionError):
        cache.incr("counter")  # a counter's caller must know it did not count
