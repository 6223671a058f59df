"""``manage.py export_tools [--format tools|single] [-o FILE]``: the catalog as importable YAML.

Secret values are never written: secret configs are listed by name only.
"""

from __future__ import annotations

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from registry.importers.export import FORMATS, export_catalog


class Command(BaseCommand):
    help = "Export the tool catalog (and MCP servers) as YAML that import_tools reads back."

    def add_arguments(self, parser):
        parser.add_argument("--format", choices=FORMATS, default="tools")
        parser.add_argument("-o", "--output", help="File to write (default: standard output)")

    def handle(self, *args, **options):
        text = export_catalog(options["format"])
        if options["output"]:
            try:
                Path(options["output"]).write_text(text, encoding="utf-8")
            except OSError as exc:
                raise CommandError(f"cannot write {options['output']}: {exc}") from exc
            self.stderr.write(f"Wrote {options['output']}")
        else:
            self.stdout.write(text, ending="")
