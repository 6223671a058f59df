"""Importing and exporting the tool catalog.

Formats read (detected automatically): a catalog file with ``tools:`` and/or
``mcp_servers:`` entries (``tools.yml`` / ``mcp.yml``), single-tool YAML
documents (``type: tool``), and OpenAPI 3.x specifications (one ``http`` tool
per operation). Entry points: ``registry.importers.run.import_content`` and
``registry.importers.export.export_catalog``. Every write goes through the
registry services inside one transaction: with any error nothing is written.

This package's ``__init__`` imports nothing so that the services may use its
helpers (``naming``) without an import cycle (``registry.schema_rows`` is beside it).
"""
