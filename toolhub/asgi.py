"""The ASGI entry point: Django, plus the apps ``TOOLHUB_ASGI_MOUNTS`` names (the MCP endpoint).

``uvicorn toolhub.asgi:application`` (or gunicorn with uvicorn workers) serves the
whole of ToolHub. A mounted app is named by dotted path and imported here, so the
project package imports no app (as ``ROOT_URLCONF`` includes urls by string). A
mounted app that has a ``lifespan()`` async context manager runs it for as long as
the server runs (the ASGI lifespan protocol).

Django itself is served as the WSGI application on a fixed pool of
``TOOLHUB_ASGI_DJANGO_THREADS`` threads (a2wsgi), as gunicorn's gthread worker
serves it. Django's own ASGI handler runs each request's sync code in a thread of
its own, so every request opened a new PostgreSQL session and left the old ones
open (``too many clients`` at 16 concurrent calls; bench/README.md, "MCP
tools/call"). Every thread of the process, Django's and the MCP endpoint's alike,
borrows its connection from the process's one pool (``toolhub.db.pool``): at most
``TOOLHUB_DB_POOL_SIZE`` connections per process, whatever the load.
"""

import os
from contextlib import AsyncExitStack

from django.core.wsgi import get_wsgi_application

from toolhub import tracing
from toolhub.db import pool

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
tracing.setup()  # before the application loads its middleware; nothing when OTEL_* is unset
django_wsgi = get_wsgi_application()  # sets Django up before the mounts import

from a2wsgi import WSGIMiddleware  # noqa: E402
from django.conf import settings  # noqa: E402
from django.utils.module_loading import import_string  # noqa: E402


class MountRouter:
    """Send each HTTP request under a mounted prefix to its app, the rest to Django."""

    def __init__(self, default, mounts: dict[str, object]):
        self.default = default
        # Longest prefix first, so /mcp/x never goes to a shorter mount by mistake.
        self.mounts = sorted(mounts.items(), key=lambda item: -len(item[0]))
        self.apps = list(dict.fromkeys(app for _, app in self.mounts))

    def app_for(self, path: str):
        for prefix, app in self.mounts:
            if path == prefix or path.startswith(prefix.rstrip("/") + "/"):
                return app
        return self.default

    async def __call__(self, scope, receive, send):
        # A serving process: its bounded pool is put in place at the first event (the
        # lifespan's start, or the first request), before any connection; importing this
        # module changes no setting. Once per process.
        pool.configure_process("web")
        if scope["type"] == "lifespan":
            await self.lifespan(receive, send)
            return
        await self.app_for(scope.get("path", ""))(scope, receive, send)

    async def lifespan(self, receive, send):
        message = await receive()
        assert message["type"] == "lifespan.startup"
        async with AsyncExitStack() as stack:
            try:
                for app in self.apps:
                    if hasattr(app, "lifespan"):
                        await stack.enter_async_context(app.lifespan())
            except Exception as exc:
                await send({"type": "lifespan.startup.failed", "message": str(exc)})
                raise
            await send({"type": "lifespan.startup.complete"})
            message = await receive()  # lifespan.shutdown
        await send({"type": "lifespan.shutdown.complete"})


application = MountRouter(
    WSGIMiddleware(django_wsgi, workers=settings.TOOLHUB_ASGI_DJANGO_THREADS),
    {prefix: import_string(path) for prefix, path in settings.TOOLHUB_ASGI_MOUNTS.items()},
)
