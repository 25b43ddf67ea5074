"""Arguments and output shared by the netbox_import and netbox_export commands."""

from __future__ import annotations

from django.core.management.base import CommandError

from inventory.netbox import mapping


def add_connection_arguments(parser) -> None:
    parser.add_argument("--url", required=True, help="NetBox base URL, e.g. https://netbox.example")
    parser.add_argument("--token", required=True, help="NetBox API token")
    parser.add_argument(
        "--dry-run", action="store_true", help="Print what would change, change nothing"
    )
    parser.add_argument(
        "--role",
        action="append",
        default=[],
        metavar="SLUG=KIND",
        help="Map a NetBox device role slug to node, leaf, spine, storage or management "
        "(repeatable; replaces the default map: "
        + ", ".join(f"{slug}={kind}" for slug, kind in mapping.DEFAULT_ROLE_MAP.items())
        + ")",
    )


def role_map_from(options: dict) -> dict[str, str]:
    if not options["role"]:
        return dict(mapping.DEFAULT_ROLE_MAP)
    try:
        return mapping.parse_role_map(options["role"])
    except mapping.MappingError as exc:
        raise CommandError(str(exc)) from exc
