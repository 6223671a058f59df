import os

from django.core.wsgi import get_wsgi_application

from toolhub import tracing
from toolhub.db import pool

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
tracing.setup()  # before the application loads its middleware; nothing when OTEL_* is unset
application = get_wsgi_application()
pool.configure_process("web")  # before the first request: the pool is built at the first
