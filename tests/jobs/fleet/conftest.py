"""The SAKURAONE fleet for the job-to-hardware tests: imported once for this package only, so
the other jobs tests keep their own small inventories."""

from tests.inventory.conftest import _sakuraone_spec_text, sakuraone  # noqa: F401
