from django.core.management.base import BaseCommand

from registry.services.audit_chain import audit_seal_all


class Command(BaseCommand):
    help = "Append every unsealed audit event to the hash chain now (beat does this every few seconds)."

    def handle(self, *args, **options):
        count = audit_seal_all()
        self.stdout.write(f"Sealed {count} event(s).")
