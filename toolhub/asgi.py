"""The ASGI entry point: Django, plus the apps ``TOOLHUB_ASGI_MOUNTS`` names (the MCP endpoint).

``uvicorn toolhub.asgi:application`` (or gunicorn with uvicorn workers) serves the
whole of ToolHub. A mounted app is named by dotted path and imported here, so the
project package imports no app (as ``ROOT_URLCONF`` includes urls by string). A
mounted app that has a ``lifespan()`` async context manager runs it for as long as
the server runs (the ASGI lifespan protocol).
"""

import os
from contextlib import AsyncExitStack

from django.core.asgi import get_asgi_application

from toolhub import tracing

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")
# Under ASGI every request runs in a thread of its own: PostgreSQL connections come
# from a pool per process, not one kept per thread (toolhub/settings.py).
os.environ.setdefault("TOOLHUB_DB_POOL_SIZE", "16")
tracing.setup()  # before the application loads its middleware; nothing when OTEL_* is unset
django_application = get_asgi_application()  # sets Django up before the mounts import

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
    django_application,
    {prefix: import_string(path) for prefix, path in settings.TOOLHUB_ASGI_MOUNTS.items()},
)
