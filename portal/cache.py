"""The Redis cache, failing open: an unreachable Redis is a cache miss, not a failed request.

What the portal keeps in the cache (API throttling budgets, page fragments) is worth less than
answering: with Redis down, Action requests must still return 202, so a read
answers "not cached" and a write is skipped, each logged. Counters (`incr`) and `clear` still
raise: their callers must know.
"""

from __future__ import annotations

import functools
import logging

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

REDIS_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)


def _failing_open(method, answer_instead):
    """`method`, answering `answer_instead(*its arguments)` while Redis is unreachable."""

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        try:
            return method(self, *args, **kwargs)
        except REDIS_UNREACHABLE as error:
            logger.warning("cache %s skipped, Redis unreachable: %s", method.__name__, error)
            return answer_instead(*args, **kwargs)

    return call


def _nothing(*args, **kwargs):
    return None


def _not_done(*args, **kwargs):
    return False


class FailOpenRedisCacheClient(RedisCacheClient):
    add = _failing_open(RedisCacheClient.add, _not_done)
    get = _failing_open(RedisCacheClient.get, lambda key, default: default)
    set = _failing_open(RedisCacheClient.set, _nothing)
    touch = _failing_open(RedisCacheClient.touch, _not_done)
    delete = _failing_open(RedisCacheClient.delete, _not_done)
    get_many = _failing_open(RedisCacheClient.get_many, lambda keys: {})
    has_key = _failing_open(RedisCacheClient.has_key, _not_done)
    # Django's contract: set_many returns the keys it could not store.
    set_many = _failing_open(RedisCacheClient.set_many, lambda data, timeout: list(data))
    delete_many = _failing_open(RedisCacheClient.delete_many, _nothing)


class FailOpenRedisCache(RedisCache):
    """Django's RedisCache whose reads and writes degrade to misses while Redis is down."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = FailOpenRedisCacheClient
