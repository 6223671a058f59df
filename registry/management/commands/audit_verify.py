import json

from django.core.management.base import BaseCommand, CommandError

from registry.services.audit_chain import audit_seal_all, audit_verify


class Command(BaseCommand):
    help = (
        "Recompute the audit log's hash chain (from the latest retention checkpoint, or with "
        "--from-start from the first event) and name the first event that was altered, deleted, "
        "inserted or reordered. Exit status 0 when the chain is intact, 1 otherwise."
    )

    def add_arguments(self, parser):
        parser.add_argument("--from-start", action="store_true", help="Ignore checkpoints.")
        parser.add_argument("--seal", action="store_true", help="Seal pending events first.")
        parser.add_argument("--json", action="store_true", help="Print the report as JSON.")

    def handle(self, *args, from_start, seal, **options):
        as_json = options["json"]
        if seal:
            audit_seal_all()
        report = audit_verify(from_checkpoint=not from_start)
        if as_json:
            self.stdout.write(json.dumps(report.as_dict(), default=str))
        else:
            start = f"checkpoint #{report.checkpoint}" if report.checkpoint else "the first event"
            self.stdout.write(f"Checked {report.checked} event(s) from {start}.")
            for warning in report.warnings:
                self.stdout.write(self.style.WARNING(f"Warning: {warning}"))
        if report.ok:
            if not as_json:
                self.stdout.write(
                    self.style.SUCCESS(
                        f"PASS: the chain is intact up to #{report.head_sequence} ({report.head_hash})."
                    )
                )
            return
        raise CommandError(f"FAIL: {report.problem.message}", returncode=1)
