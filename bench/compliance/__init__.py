"""Compliance at scale (``compliance_scale.py``): millions of executions, then what reviewers wait for.

``environment`` (settings, the database, its notes), ``seed`` (through the
services) and ``rows`` / ``generator`` (executions, sealed audit events and
approvals as COPY lines), ``fill`` (the load), then the measurements:
``measure`` (timing a case), ``samples`` (the rows the cases aim at),
``admin_cases``, ``api_cases``, ``export_cases``, ``verify``, ``results``, and
``main`` (the command line).
"""
