from django.core.management.base import BaseCommand

from registry.services.tools import secrets_reencrypt


class Command(BaseCommand):
    help = (
        "Re-encrypt every stored secret with the first key of TOOLHUB_ENCRYPTION_KEYS. "
        "Rotate by putting the new key first, running this, then removing the old key."
    )

    def handle(self, *args, **options):
        count = secrets_reencrypt()
        self.stdout.write(self.style.SUCCESS(f"Re-encrypted {count} secret value(s)."))
