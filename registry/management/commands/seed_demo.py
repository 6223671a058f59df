from django.core.management.base import BaseCommand
from django.db import transaction

from registry.services.demo import demo_seed
from registry.services.standard_roles import describe, ensure_standard_roles


class Command(BaseCommand):
    help = "Load the demo tool catalog and roles (idempotent: running it twice changes nothing)."

    def handle(self, *args, **options):
        with transaction.atomic():
            # The standard roles come from the same code as `manage.py ensure_roles`;
            # demo_seed then finds them in place and adds the demo roles and tools.
            outcomes = ensure_standard_roles(actor=None)
            counts = demo_seed()
        for outcome in outcomes:
            self.stdout.write(describe(outcome))
        counts["roles_created"] += sum(outcome.created for outcome in outcomes)
        self.stdout.write(
            self.style.SUCCESS(
                "Demo catalog ready: {tools_created} tool(s) created, {tools_updated} updated, "
                "{roles_created} role(s) created.".format(**counts)
            )
        )
