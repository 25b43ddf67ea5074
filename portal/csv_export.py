"""CSV downloads that a spreadsheet cannot run: every export writes through `csv_writer`.

A spreadsheet treats a cell that begins with = + - @, a tab or a carriage return as a formula
(`=HYPERLINK(...)` becomes a live link that can send the sheet's data elsewhere). Such text
cells are prefixed with a single quote, as OWASP's CSV injection guidance advises; numbers are
written as they are.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable
from typing import Any

FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")


def neutralise_formula(value: Any) -> Any:
    if isinstance(value, str) and value.startswith(FORMULA_TRIGGERS):
        return f"'{value}"
    return value


class FormulaSafeWriter:
    """csv.writer's writerow and writerows, each text cell neutralised."""

    def __init__(self, stream):
        self._writer = csv.writer(stream)

    def writerow(self, row: Iterable[Any]):
        return self._writer.writerow([neutralise_formula(value) for value in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)


def csv_writer(stream) -> FormulaSafeWriter:
    return FormulaSafeWriter(stream)
