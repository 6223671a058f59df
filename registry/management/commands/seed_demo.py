from urllib.parse import urlsplit

from django.core.management.base import BaseCommand, CommandError
from django.db import transaction

from registry.services.demo import demo_seed
from registry.services.standard_roles import describe, ensure_standard_roles


class Command(BaseCommand):
    help = "Load the demo tool catalog and roles (idempotent: running it twice changes nothing)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--sandbox-url",
            help=(
                "Point the demo's HTTP tools at the demo sandbox served there "
                "(./scripts/demo passes http://127.0.0.1:8000/demo-sandbox); "
                "without it they call the public hosts they were written for."
            ),
        )

    def handle(self, *args, **options):
        sandbox_url = options.get("sandbox_url")
        if sandbox_url:
            parts = urlsplit(sandbox_url)
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise CommandError(f"--sandbox-url: {sandbox_url!r} is not an http(s) URL")
        with transaction.atomic():
            # The standard roles come from the same code as `manage.py ensure_roles`;
            # demo_seed then finds them in place and adds the demo roles and tools.
            outcomes = ensure_standard_roles(actor=None)
            counts = demo_seed(sandbox_url=sandbox_url)
        for outcome in outcomes:
            self.stdout.write(describe(outcome))
        counts["roles_created"] += sum(outcome.created for outcome in outcomes)
        self.stdout.write(
            self.style.SUCCESS(
                "Demo catalog ready: {tools_created} tool(s) created, {tools_updated} updated, "
                "{roles_created} role(s) created.".format(**counts)
            )
        )
        if sandbox_url:
            self.stdout.write(f"The demo's HTTP tools call the sandbox at {sandbox_url}.")
