"""``manage.py sync_python_tools``: one python tool per registered ``@tool`` function."""

from __future__ import annotations

from django.core.management.base import BaseCommand

from executions.python_sync import python_tools_sync


class Command(BaseCommand):
    help = (
        "Upsert a python tool for every function registered with @tool and deactivate "
        "python tools whose function is no longer registered."
    )

    def handle(self, *args, **options):
        report = python_tools_sync(actor=None)
        self.stdout.write(report.summary())
        for names, label in (
            (report.created, "created"),
            (report.updated, "updated"),
            (report.deactivated, "deactivated"),
        ):
            for name in names:
                self.stdout.write(f"  {label}: {name}")
        for item in report.skipped:
            self.stdout.write(f"  skipped: {item['tool']}: {item['reason']}")
