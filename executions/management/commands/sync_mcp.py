"""``manage.py sync_mcp [NAME ...] [--all]``: sync MCP servers' tools into the registry."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from executions.mcp_sync import mcp_server_sync
from registry.models import MCPServer


class Command(BaseCommand):
    help = "List the tools of MCP servers and upsert them as mcp tools (fails if any sync fails)."

    def add_arguments(self, parser):
        parser.add_argument("names", nargs="*", metavar="NAME", help="Servers to sync")
        parser.add_argument("--all", action="store_true", help="Sync every enabled server")

    def handle(self, *args, **options):
        names = options["names"]
        if options["all"] == bool(names):
            raise CommandError("Name the servers to sync, or give --all (not both).")
        if options["all"]:
            servers = list(MCPServer.objects.filter(is_enabled=True).order_by("name"))
        else:
            servers = list(MCPServer.objects.filter(name__in=names).order_by("name"))
            missing = sorted(set(names) - {s.name for s in servers})
            if missing:
                raise CommandError(f"Unknown MCP server(s): {', '.join(missing)}")
        failed = []
        for server in servers:
            report = mcp_server_sync(actor=None, server=server)
            self.stdout.write(report.summary())
            for tools, label in (
                (report.created, "created"),
                (report.updated, "updated"),
                (report.deactivated, "deactivated"),
            ):
                for tool in tools:
                    self.stdout.write(f"  {label}: {tool}")
            for item in report.skipped:
                self.stdout.write(f"  skipped: {item['tool']}: {item['reason']}")
            for warning in report.warnings:
                self.stdout.write(f"  warning: {warning}")
            if not report.ok:
                failed.append(server.name)
        if failed:
            raise CommandError(f"Sync failed for: {', '.join(failed)}")
