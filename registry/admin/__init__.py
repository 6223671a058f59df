"""The registry's admin.

Every JSON column in every admin form is edited with ``AdminJSONField`` (no
``RecursionError`` on deeply nested text, no ``NaN``): it is made the admin's
default form field for ``JSONField`` here, before any model admin is registered
(each copies the defaults when it is created), so that no admin form, whichever
app declares it, falls back to Django's own. Forms that declare a JSON field
themselves use ``AdminJSONField`` directly.
"""

from django.contrib.admin import options
from django.db import models

from registry.admin.forms import AdminJSONField

options.FORMFIELD_FOR_DBFIELD_DEFAULTS[models.JSONField] = {"form_class": AdminJSONField}

from registry.admin import (  # noqa: E402, F401
    agents,
    api_tokens,
    audit,
    grants,
    guards,
    limits,
    mcp,
    oauth,
    roles,
    sso,
    tools,
    toolsets,
    upstream,
    users,
)
