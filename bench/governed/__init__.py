"""Governed calls through ToolHub against direct calls to the same upstream (``governed_vs_direct.py``).

``options`` (the command line), ``environment`` (database, Redis, the environment
of every process, an exported revision), ``stack`` (upstream, migrations and
seed, Celery, the web server), ``calls`` (one call of each mode), ``load`` (N
calls over c threads), ``analysis`` (the Execution rows), ``report`` and
``main`` (one run, start to cleanup).
"""
