"""manage.py import_topology FILE [--scale N] [--dry-run]"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from inventory.topology.importer import import_topology
from inventory.topology.spec import spec_from_yaml
from portal.errors import InvalidInput


class Command(BaseCommand):
    help = (
        "Import a topology spec (YAML, see inventory/topology/SPEC.md) into the inventory. "
        "Idempotent and atomic; prints what was created, updated and left unchanged."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="YAML spec, e.g. inventory/fixtures/sakuraone.yaml")
        parser.add_argument(
            "--scale", type=int, default=1, help="Repeat the spec's pods N times (benchmarks)"
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change, change nothing"
        )
        parser.add_argument("--quiet", action="store_true", help="No progress lines")

    def handle(self, *args, **options):
        spec = load_spec_file(options["file"])
        last_percent: dict[str, int] = {}

        def progress(step: str, done: int, total: int) -> None:
            percent = 100 if total == 0 else done * 100 // total
            if options["quiet"] or last_percent.get(step) == percent:
                return
            last_percent[step] = percent
            self.stderr.write(f"  {step:<9} {done:>7}/{total:<7} {percent:3d}%")

        try:
            report = import_topology(
                spec, scale=options["scale"], progress=progress, dry_run=options["dry_run"]
            )
        except InvalidInput as exc:
            errors = exc.detail if isinstance(exc.detail, list) else [str(exc.detail)]
            for error in errors:
                self.stderr.write(self.style.ERROR(f"  {error}"))
            raise CommandError(
                f"{len(errors)} error(s) in {options['file']}; nothing changed"
            ) from exc
        verb = "Would import" if report.dry_run else "Imported"
        self.stdout.write(
            f"{verb} {report.spec_name} x{report.scale} in {report.duration_s:.2f}s: "
            f"{report.summary()}"
        )
        self.stdout.write(f"  {'':<9} {'created':>8} {'updated':>8} {'unchanged':>10}")
        for label, counts in report.counts.items():
            self.stdout.write(
                f"  {label:<9} {counts.created:>8} {counts.updated:>8} {counts.unchanged:>10}"
            )


def load_spec_file(path: str):
    """The parsed YAML of `path`; a read or syntax error stops the command, naming the line."""
    try:
        with open(path, encoding="utf-8") as handle:
            return spec_from_yaml(handle)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror}") from exc
    except InvalidInput as exc:
        raise CommandError(f"{path}: {exc.detail[0]}") from exc
