"""manage.py validate_topology [--json] [--rule RULE ...]"""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from inventory.validation import ERROR, RULES, validate_topology


class Command(BaseCommand):
    help = (
        "Check the whole fleet's cabling against the fabric rules (rail, bisection, dangling and "
        "double-cabled ends, speeds, leaf-spine mesh). Exits 1 when any violation is found."
    )

    def add_arguments(self, parser):
        parser.add_argument("--json", action="store_true", help="Print violations as JSON")
        parser.add_argument(
            "--rule", action="append", choices=sorted(RULES), help="Only these rules (repeatable)"
        )

    def handle(self, *args, **options):
        rules = set(options["rule"]) if options["rule"] else None
        violations = validate_topology(rules=rules)
        if options["json"]:
            self.stdout.write(
                json.dumps(
                    {
                        "violations": [violation.as_dict() for violation in violations],
                        "count": len(violations),
                    },
                    indent=2,
                )
            )
        else:
            for violation in violations:
                style = self.style.ERROR if violation.severity == ERROR else self.style.WARNING
                self.stdout.write(
                    style(f"{violation.severity:<7} {violation.rule:<16} ") + violation.message
                )
            errors = sum(1 for violation in violations if violation.severity == ERROR)
            warnings = len(violations) - errors
            summary = f"{len(violations)} violation(s): {errors} error(s), {warnings} warning(s)"
            self.stdout.write(summary if violations else "No violations: the topology is sound.")
        if violations:
            raise CommandError("topology has violations", returncode=1)
