"""``manage.py import_openapi SPEC --base-url URL --namespace NAME [--dry-run]``."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from registry.importers.run import import_content
from registry.management.commands.import_tools import finish, read_text


class Command(BaseCommand):
    help = (
        "Import an OpenAPI 3.x specification (JSON or YAML): one http tool per operation, "
        "named <namespace>__<operationId>. Re-importing updates the tools and deactivates "
        "operations that left the specification (operations left out with --tag/--operation "
        "are not touched)."
    )

    def add_arguments(self, parser):
        parser.add_argument("spec", help="OpenAPI file ('-' for standard input)")
        parser.add_argument("--base-url", required=True, help="Base URL the tools call")
        parser.add_argument("--namespace", required=True, help="Prefix of the tools' names")
        parser.add_argument(
            "--tag",
            action="append",
            dest="tags",
            metavar="TAG",
            help="Import only operations with this tag (repeatable; with --operation: either).",
        )
        parser.add_argument(
            "--operation",
            action="append",
            dest="operations",
            metavar="OPERATION",
            help="Import only this operationId or 'METHOD /path' (repeatable).",
        )
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change; write nothing."
        )

    def handle(self, *args, **options):
        report = import_content(
            read_text(options["spec"]),
            actor=None,
            fmt="openapi",
            dry_run=options["dry_run"],
            base_url=options["base_url"],
            namespace=options["namespace"],
            tags=options["tags"],
            operations=options["operations"],
        )
        finish(self, report)
