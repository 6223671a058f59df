import os

from django.core.wsgi import get_wsgi_application

from toolhub import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
tracing.setup()  # before the application loads its middleware; nothing when OTEL_* is unset
application = get_wsgi_application()
