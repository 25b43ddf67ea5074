"""NUL characters in input: PostgreSQL text and jsonb cannot hold them, so every way text
enters (query strings, request bodies, raw intake bodies) refuses them with a 400 that names
where the character was, instead of a 500 from the database."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

NUL = "\x00"
NUL_MESSAGE = "NUL characters (\\u0000) are not allowed."
# The same rules as OpenAPI patterns (ECMA 262, which Python's re also reads): any text without
# NUL, and text with something besides whitespace (DRF trims, then refuses a blank value).
ANY_TEXT_PATTERN = r"^[^\u0000]*$"
NOT_BLANK_TEXT_PATTERN = r"^[^\u0000]*[^\s\u0000][^\u0000]*$"
# A reason Slurm, the Action log and the audit show on one line: after trimming, something
# printable and no control character (no newline, tab or escape inside it).
ONE_LINE_PATTERN = r"^\s*[^\u0000-\u001f\u007f]*[^\s\u0000-\u001f\u007f][^\u0000-\u001f\u007f]*\s*$"
ONE_LINE_MESSAGE = "Use one line of printable text."


def is_one_line(text: str) -> bool:
    """Whether trimmed `text` is one line of printable text (ONE_LINE_PATTERN)."""
    trimmed = text.strip()
    return bool(trimmed) and not any(ord(c) < 32 or ord(c) == 127 for c in trimmed)


def nul_character_field(value, path: str = "") -> str | None:
    """The path (`alerts[0].labels.node`, `[3].hostname`, or "" for the value itself) of the
    first string or key in parsed input that holds a NUL character; None if there is none."""
    if isinstance(value, str):
        return path if NUL in value else None
    if isinstance(value, Mapping):
        for key, item in value.items():
            item_path = f"{path}.{key}" if path else str(key)
            if isinstance(key, str) and NUL in key:
                return item_path
            found = nul_character_field(item, item_path)
            if found is not None:
                return found
        return None
    if isinstance(value, Iterable) and not isinstance(value, bytes | bytearray):
        for index, item in enumerate(value):
            found = nul_character_field(item, f"{path}[{index}]")
            if found is not None:
                return found
    return None


def nul_character_error(field: str) -> dict[str, object]:
    """The 400 body for a NUL character at `field`: `detail` for the request, and the field."""
    where = field.replace(NUL, "\\u0000") or "body"
    return {"detail": f"{where}: {NUL_MESSAGE}", where: [NUL_MESSAGE]}


def without_nul_characters(text: str) -> str:
    """Text that PostgreSQL can store, for keeping a refused delivery as received: each NUL
    becomes U+FFFD, as undecodable bytes already do."""
    return text.replace(NUL, "\ufffd")
