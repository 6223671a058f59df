from datetime import UTC, datetime
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone
from django.utils.dateparse import parse_date, parse_datetime

from executions.services.retention import audit_retention


class Command(BaseCommand):
    help = (
        "Remove audit events and finished executions older than --before, after exporting them "
        "(JSON Lines with the chain head) to --export-dir and leaving a checkpoint so "
        "audit_verify still passes. The only way records leave the database."
    )

    def add_arguments(self, parser):
        parser.add_argument("--before", required=True, help="ISO date or date-time (UTC if naive)")
        parser.add_argument("--export-dir", required=True)

    def handle(self, *args, before, export_dir, **options):
        moment = parse_datetime(before)
        if moment is None:
            day = parse_date(before)
            if day is None:
                raise CommandError(f"--before {before!r} is not an ISO date or date-time.")
            moment = datetime(day.year, day.month, day.day)
        if timezone.is_naive(moment):
            moment = timezone.make_aware(moment, UTC)
        if moment > timezone.now():
            raise CommandError("--before is in the future.")
        checkpoint = audit_retention(before=moment, export_dir=Path(export_dir))
        if checkpoint is None:
            self.stdout.write("Nothing to remove.")
            return
        self.stdout.write(
            self.style.SUCCESS(
                f"Exported and removed {checkpoint.events_removed} audit event(s) and "
                f"{checkpoint.executions_removed} execution(s) to {checkpoint.export_path}; "
                f"checkpoint at #{checkpoint.sequence}."
            )
        )
