"""ToolHub settings, read from the environment (see docs/operations.md "Configuration").

With nothing set, ToolHub runs embedded: SQLite under ``var/``, a local-memory
cache, Celery tasks run in-process, DEBUG on and a development secret
generated into ``var/``. Setting ``DATABASE_URL`` switches to the production
shape, where DEBUG defaults to off and secrets must be provided.

``DJANGO_SETTINGS_MODULE=toolhub.settings`` is this package: it gathers the
modules below, one per concern, each declaring and documenting its settings and
importing by name the few it derives from (``DEBUG`` and the paths from ``base``,
the Redis timeouts, the request size). The parsing helpers live in
``toolhub.env``. The order below is the order the environment is checked in, so
a bad value is reported as it was before the settings were split.
"""

# The order is meant (see above), and a star import is how Django settings are composed.
# ruff: noqa: I001, F403
from toolhub.settings.base import *
from toolhub.settings.security import *
from toolhub.settings.database import *
from toolhub.settings.broker import *
from toolhub.settings.api import *
from toolhub.settings.mcp import *
from toolhub.settings.oauth import *
from toolhub.settings.execution import *
from toolhub.settings.logs import *
from toolhub.settings.sso import *
