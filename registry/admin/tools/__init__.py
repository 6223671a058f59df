"""The tool catalog in the admin. Every save goes through the registry services (and so the audit log).

One module per part: ``tool_admin`` (the model admin: lists, rights), ``inlines``
(parameters, configs, rate limits), ``filters``, ``display`` (read-only fields),
``writes`` (saves and deletes through the services) and ``actions``. The site's
admin for ``Tool`` is registered by ``executions.admin.tools``, which composes
``ToolAdmin`` with the executions' parts of the page.
"""

from registry.admin.tools.tool_admin import ToolAdmin

__all__ = ["ToolAdmin"]
