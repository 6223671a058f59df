import os

from django.core.wsgi import get_wsgi_application

from toolhub import tracing
from toolhub.db import pool

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
tracing.setup()  # before the application loads its middleware; nothing when OTEL_* is unset
django_application = get_wsgi_application()


def application(environ, start_response):
    """Django, in a serving process: its bounded pool is put in place on the first request
    (before any connection; importing this module changes no setting)."""
    pool.configure_process("web")
    return django_application(environ, start_response)
