"""The Redis cache, failing open: an unreachable Redis is a cache miss, not a failed request.

What the portal keeps in the cache (API throttling budgets, page fragments) is worth less than
answering: with Redis down, Action requests must still return 202 (issue 13), so a read
answers "not cached" and a write is skipped, each logged. Counters (`incr`) and `clear` still
raise: their callers must know.
"""

from __future__ import annotations

import logging

from django.core.cache.backends.redis import RedisCache, RedisCacheClient
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

logger = logging.getLogger(__name__)

REDIS_UNREACHABLE = (RedisConnectionError, RedisTimeoutError)


def _warn(operation: str, error: Exception) -> None:
    logger.warning("cache %s skipped, Redis unreachable: %s", operation, error)


class FailOpenRedisCacheClient(RedisCacheClient):
    def add(self, key, value, timeout):
        try:
            return super().add(key, value, timeout)
        except REDIS_UNREACHABLE as error:
            _warn("add", error)
            return False

    def get(self, key, default):
        try:
            return super().get(key, default)
        except REDIS_UNREACHABLE as error:
            _warn("get", error)
            return default

    def set(self, key, value, timeout):
        try:
            super().set(key, value, timeout)
        except REDIS_UNREACHABLE as error:
            _warn("set", error)

    def touch(self, key, timeout):
        try:
            return super().touch(key, timeout)
        except REDIS_UNREACHABLE as error:
            _warn("touch", error)
            return False

    def delete(self, key):
        try:
            return super().delete(key)
        except REDIS_UNREACHABLE as error:
            _warn("delete", error)
            return False

    def get_many(self, keys):
        try:
            return super().get_many(keys)
        except REDIS_UNREACHABLE as error:
            _warn("get_many", error)
            return {}

    def has_key(self, key):
        try:
            return super().has_key(key)
        except REDIS_UNREACHABLE as error:
            _warn("has_key", error)
            return False

    def set_many(self, data, timeout):
        try:
            return super().set_many(data, timeout)
        except REDIS_UNREACHABLE as error:
            _warn("set_many", error)
            return list(data)

    def delete_many(self, keys):
        try:
            return super().delete_many(keys)
        except REDIS_UNREACHABLE as error:
            _warn("delete_many", error)


class FailOpenRedisCache(RedisCache):
    """Django's RedisCache whose reads and writes degrade to misses while Redis is down."""

    def __init__(self, server, params):
        super().__init__(server, params)
        self._class = FailOpenRedisCacheClient
