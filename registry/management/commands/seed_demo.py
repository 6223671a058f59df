from django.core.management.base import BaseCommand

from registry.services.demo import demo_seed


class Command(BaseCommand):
    help = "Load the demo tool catalog and roles (idempotent: running it twice changes nothing)."

    def handle(self, *args, **options):
        counts = demo_seed()
        self.stdout.write(
            self.style.SUCCESS(
                "Demo catalog ready: {tools_created} tool(s) created, {tools_updated} updated, "
                "{roles_created} role(s) created.".format(**counts)
            )
        )
