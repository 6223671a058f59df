import os

from django.core.asgi import get_asgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
# Under ASGI every request runs in a thread of its own: PostgreSQL connections come
# from a pool per process, not one kept per thread (toolhub/settings.py).
os.environ.setdefault("TOOLHUB_DB_POOL_SIZE", "16")
application = get_asgi_application()
