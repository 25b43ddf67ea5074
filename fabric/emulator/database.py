"""The four SONiC Redis databases an emulated switch keeps its state in.

SONiC keeps every table as Redis hashes whose key joins the table name and the entry key with
a separator that depends on the database: CONFIG_DB and STATE_DB use `|` (`PORT|Ethernet0`),
APPL_DB and COUNTERS_DB use `:` (`PORT_TABLE:Ethernet0`, `COUNTERS:oid:0x1000000000001`).
The emulator stores exactly those keys, so what `sonic-db-cli` prints is what a real box prints.

Two backends share one interface: `MemoryDatabase` (the default, one per switch) and
`RedisDatabase`, which lets many emulated switches share one Redis server by prefixing every
key with a per-switch namespace.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import redis

APPL_DB = "APPL_DB"
COUNTERS_DB = "COUNTERS_DB"
CONFIG_DB = "CONFIG_DB"
STATE_DB = "STATE_DB"

# Database ids from SONiC's database_config.json.
SONIC_DB_NUMBERS: dict[str, int] = {APPL_DB: 0, COUNTERS_DB: 2, CONFIG_DB: 4, STATE_DB: 6}
DB_NAMES = tuple(SONIC_DB_NUMBERS)
SEPARATORS: dict[str, str] = {APPL_DB: ":", COUNTERS_DB: ":", CONFIG_DB: "|", STATE_DB: "|"}

Hash = dict[str, str]


def make_key(db: str, table: str, *parts: str) -> str:
    """`make_key(CONFIG_DB, "QUEUE", "Ethernet0", "3")` -> `"QUEUE|Ethernet0|3"`."""
    return SEPARATORS[_checked(db)].join((table, *parts))


def _checked(db: str) -> str:
    if db not in SEPARATORS:
        raise ValueError(f"unknown SONiC database {db!r}; expected one of {', '.join(DB_NAMES)}")
    return db


class Database(ABC):
    """Hash-only access to one switch's APPL_DB, COUNTERS_DB, CONFIG_DB and STATE_DB.

    Every method takes the SONiC database name first. Writes follow Redis semantics: a hash
    with no fields left does not exist, and `hset` returns how many fields were new.
    """

    @abstractmethod
    def hgetall(self, db: str, key: str) -> Hash: ...

    @abstractmethod
    def hget(self, db: str, key: str, field: str) -> str | None: ...

    @abstractmethod
    def hset(self, db: str, key: str, mapping: Mapping[str, str]) -> int: ...

    @abstractmethod
    def hset_many(self, db: str, entries: Mapping[str, Mapping[str, str]]) -> None:
        """Write many hashes at once (one round trip on Redis); used for counter updates."""

    @abstractmethod
    def hdel(self, db: str, key: str, *fields: str) -> int: ...

    @abstractmethod
    def keys(self, db: str, pattern: str = "*") -> list[str]:
        """Keys matching a Redis glob pattern, sorted."""

    @abstractmethod
    def delete(self, db: str, *keys: str) -> int: ...

    def flush(self, db: str) -> None:
        """Remove every key of this switch from one database."""
        existing = self.keys(db)
        if existing:
            self.delete(db, *existing)

    def flush_all(self) -> None:
        """Remove every key of this switch from all four databases, as a reboot does."""
        for db in DB_NAMES:
            self.flush(db)

    def dump(self, db: str) -> dict[str, Hash]:
        """Every hash of one database, as `config save` writes CONFIG_DB to config_db.json."""
        return {key: self.hgetall(db, key) for key in self.keys(db)}

    def load(self, db: str, content: Mapping[str, Mapping[str, str]]) -> None:
        """Replace one database's content, as `config reload` does for CONFIG_DB."""
        self.flush(db)
        self.hset_many(db, {key: fields for key, fields in content.items() if fields})


class MemoryDatabase(Database):
    """Process-local backend: a dict of hashes per SONiC database."""

    def __init__(self) -> None:
        self._data: dict[str, dict[str, Hash]] = {name: {} for name in DB_NAMES}

    def _db(self, db: str) -> dict[str, Hash]:
        return self._data[_checked(db)]

    def hgetall(self, db: str, key: str) -> Hash:
        return dict(self._db(db).get(key, {}))

    def hget(self, db: str, key: str, field: str) -> str | None:
        return self._db(db).get(key, {}).get(field)

    def hset(self, db: str, key: str, mapping: Mapping[str, str]) -> int:
        if not mapping:
            raise ValueError("HSET needs at least one field")  # as Redis refuses it
        entry = self._db(db).setdefault(key, {})
        added = len(set(mapping).difference(entry))
        entry.update(mapping)
        return added

    def hset_many(self, db: str, entries: Mapping[str, Mapping[str, str]]) -> None:
        for key, mapping in entries.items():
            self.hset(db, key, mapping)

    def hdel(self, db: str, key: str, *fields: str) -> int:
        entry = self._db(db).get(key)
        if entry is None:
            return 0
        removed = sum(1 for field in fields if entry.pop(field, None) is not None)
        if not entry:
            del self._db(db)[key]
        return removed

    def keys(self, db: str, pattern: str = "*") -> list[str]:
        matcher = redis_glob(pattern)
        return sorted(key for key in self._db(db) if matcher.fullmatch(key))

    def delete(self, db: str, *keys: str) -> int:
        store = self._db(db)
        return sum(1 for key in keys if store.pop(key, None) is not None)


def redis_glob(pattern: str) -> re.Pattern[str]:
    """Compile a Redis KEYS/SCAN pattern: `*`, `?`, `[abc]`, `[^a-z]` and backslash escapes."""
    out: list[str] = []
    index = 0
    while index < len(pattern):
        char = pattern[index]
        index += 1
        close = pattern.find("]", index) if char == "[" else -1
        if char == "\\" and index < len(pattern):
            out.append(re.escape(pattern[index]))
            index += 1
        elif char == "*":
            out.append(".*")
        elif char == "?":
            out.append(".")
        elif close > index:
            body = pattern[index:close]
            negate = body.startswith("^")
            members = "".join("\\" + c if c in "\\[]^" else c for c in body[negate:])
            out.append(f"[{'^' if negate else ''}{members}]")
            index = close + 1
        else:
            out.append(re.escape(char))
    return re.compile("".join(out), re.DOTALL)


def _glob_escape(text: str) -> str:
    """Escape Redis glob metacharacters so a key prefix matches only itself."""
    return "".join("\\" + char if char in "*?[]\\" else char for char in text)


class RedisDatabase(Database):
    """Backend on a real Redis server, shared by many switches.

    Each SONiC database lives in its own Redis database number (`db_numbers`, SONiC's own
    numbering by default). Keys are stored as `<prefix><DB name>:<SONiC key>`: the prefix keeps
    switches apart, and the database name keeps the layout unambiguous when several SONiC
    databases are mapped onto one Redis database number (tests map all four onto one spare
    number so they never touch data they do not own).
    """

    def __init__(
        self,
        prefix: str,
        url: str = "redis://127.0.0.1:6379",
        db_numbers: Mapping[str, int] | None = None,
    ) -> None:
        if not prefix:
            raise ValueError("a key prefix is required so that switches sharing Redis stay apart")
        numbers = dict(SONIC_DB_NUMBERS if db_numbers is None else db_numbers)
        missing = set(DB_NAMES).difference(numbers)
        if missing:
            raise ValueError(f"db_numbers lacks {', '.join(sorted(missing))}")
        # Imported here: redis-py takes a noticeable time to import and the in-memory
        # backend, the default, does not need it.
        import redis

        self.prefix = prefix
        clients: dict[int, redis.Redis] = {}
        self._clients = {
            name: clients.setdefault(
                numbers[name], redis.Redis.from_url(url, db=numbers[name], decode_responses=True)
            )
            for name in DB_NAMES
        }

    def _client(self, db: str) -> redis.Redis:
        return self._clients[_checked(db)]

    def _key(self, db: str, key: str) -> str:
        return f"{self.prefix}{db}:{key}"

    def hgetall(self, db: str, key: str) -> Hash:
        return self._client(db).hgetall(self._key(db, key))

    def hget(self, db: str, key: str, field: str) -> str | None:
        return self._client(db).hget(self._key(db, key), field)

    def hset(self, db: str, key: str, mapping: Mapping[str, str]) -> int:
        return int(self._client(db).hset(self._key(db, key), mapping=dict(mapping)))

    def hset_many(self, db: str, entries: Mapping[str, Mapping[str, str]]) -> None:
        pipe = self._client(db).pipeline(transaction=False)
        for key, mapping in entries.items():
            pipe.hset(self._key(db, key), mapping=dict(mapping))
        pipe.execute()

    def hdel(self, db: str, key: str, *fields: str) -> int:
        return int(self._client(db).hdel(self._key(db, key), *fields)) if fields else 0

    def keys(self, db: str, pattern: str = "*") -> list[str]:
        own = self._key(db, "")
        match = _glob_escape(own) + pattern
        return sorted(key[len(own):] for key in self._client(db).scan_iter(match=match, count=1000))

    def delete(self, db: str, *keys: str) -> int:
        if not keys:
            return 0
        return int(self._client(db).delete(*(self._key(db, key) for key in keys)))

    def dump(self, db: str) -> dict[str, Hash]:
        names = self.keys(db)
        pipe = self._client(db).pipeline(transaction=False)
        for key in names:
            pipe.hgetall(self._key(db, key))
        return dict(zip(names, pipe.execute(), strict=True))

    def close(self) -> None:
        for client in set(self._clients.values()):
            client.close()
