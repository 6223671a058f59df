"""``manage.py ensure_roles``: the standard roles (platform-admin, reviewer), created or completed."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import DatabaseError

from registry.services.standard_roles import describe, ensure_standard_roles
from toolhub.exceptions import ToolHubError


class Command(BaseCommand):
    help = (
        "Create the standard roles (platform-admin, reviewer) if missing and give existing ones "
        "any permission or all-tools grant they lack. Extra permissions are kept; a second run "
        "changes nothing."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "--missing-only",
            action="store_true",
            help="Only create roles that do not exist; leave existing ones as they are "
            "(for running at every deployment start).",
        )

    def handle(self, *args, **options):
        try:
            outcomes = ensure_standard_roles(actor=None, missing_only=options["missing_only"])
        except ToolHubError as exc:
            raise CommandError(f"Could not ensure the standard roles: {exc.message}") from exc
        except DatabaseError as exc:
            raise CommandError(
                f"Could not ensure the standard roles (has `manage.py migrate` run?): {exc}"
            ) from exc
        for outcome in outcomes:
            line = describe(outcome)
            self.stdout.write(self.style.SUCCESS(line) if outcome.changed else line)
