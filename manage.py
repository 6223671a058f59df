#!/usr/bin/env python
"""Django's command-line utility for ToolHub."""

import os
import sys


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
    from django.core.exceptions import ImproperlyConfigured
    from django.core.management import execute_from_command_line

    try:
        execute_from_command_line(sys.argv)
    except ImproperlyConfigured as exc:
        # A setting the operator must fix (it names the variable): one line, no traceback.
        sys.stderr.write(f"ToolHub is not configured: {exc}\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
