"""Compliance at scale: 10 million executions and their sealed audit log, then what reviewers wait for.

    .venv/bin/python bench/compliance_scale.py [--executions 10000000] [--skip-fill] [--only PATTERN]

1. Fill (unless ``--skip-fill``): (re)create the database ``toolhub_scale``, migrate it,
   create tools, roles, agents and people through the project's services (so their
   governance events are real and sealed), then stream N executions, their audit
   events (admission decision + outcome, as the pipeline writes them; refusals and
   cache hits have one, approval-gated calls three) and approvals into PostgreSQL
   with COPY. Audit events are sealed in the generator with
   ``registry.services.audit_chain.event_hash`` (sequence / prev_hash / hash) and the
   chain head is set, so ``audit_verify`` passes. Indexes and constraints are
   dropped before the load and rebuilt after it; tables are loaded with COPY FREEZE
   inside the transaction that truncated them; VACUUM ANALYZE at the end. The fill
   runs in a child process so the measurements below start from a fresh process.
2. Measure, in-process with ``django.test.Client`` (superuser session): the admin
   changelists of executions and audit events with each filter they offer, search,
   paging, the API's cursor pages and filters, exports (endpoint if present, else
   ``registry.exports``), and ``audit_verify`` throughput. Every query over 100 ms is
   EXPLAINed (ANALYZE, BUFFERS).

Results: ``bench/compliance_scale_results.json`` (and a Markdown table on stdout).
Drop the database afterwards with::

    psql -h 127.0.0.1 -U postgres -c 'DROP DATABASE toolhub_scale WITH (FORCE)'
"""

from __future__ import annotations

import sys

from harness import ROOT

# The code under test is this checkout's (not whatever the virtualenv's editable install points at).
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from compliance.main import main

if __name__ == "__main__":
    main(__doc__.split("\n")[0])
