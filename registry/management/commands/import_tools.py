"""``manage.py import_tools FILE [--dry-run]``: import a tools.yml, mcp.yml or single-tool YAML file."""

from __future__ import annotations

import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from registry.importers.run import import_content


def read_text(path: str) -> str:
    if path == "-":
        return sys.stdin.read()
    try:
        return Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise CommandError(f"cannot read {path}: {exc}") from exc


def finish(command: BaseCommand, report) -> None:
    """Print the report; a report with errors makes the command fail (exit status 1)."""
    command.stdout.write(report.text())
    if not report.ok:
        raise CommandError(f"{len(report.errors)} error(s); nothing was written.")


class Command(BaseCommand):
    help = (
        "Import tools and MCP servers from YAML (tools:/mcp_servers: catalogs or single-tool "
        "documents; the format is detected). Nothing is written when there is any error."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="YAML or JSON file ('-' for standard input)")
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change; write nothing."
        )

    def handle(self, *args, **options):
        report = import_content(read_text(options["file"]), actor=None, dry_run=options["dry_run"])
        finish(self, report)
