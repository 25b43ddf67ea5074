"""Seed the paper's 21 faults of January-March 2025 (faults/services/fault_history.py)."""

from django.core.management.base import BaseCommand

from faults.services.fault_history import seed_fault_history


class Command(BaseCommand):
    help = "Create the SAKURAONE paper's 21 faults and 3 vendor repair cases. Safe to run again."

    def handle(self, *args, **options):
        tickets, cases = seed_fault_history()
        self.stdout.write(
            self.style.SUCCESS(
                f"Fault history: {tickets} tickets and {cases} repair cases created."
            )
        )
