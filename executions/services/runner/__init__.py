"""The worker side: claim an execution, run its executor, record the outcome.

``execution_run`` is idempotent: it claims the row with a conditional UPDATE
(``queued → running``) and does nothing when the claim fails, so a duplicate
or redelivered task for a running or finished execution is harmless. It runs
only a row that still carries the call its admission event recorded
(``integrity``): one rewritten in the database ends ``denied`` (``integrity_error``).
``executions_reap`` ends executions a dead worker left ``running`` and
re-queues admitted ones whose task was lost before it started.

One module per part: ``slots`` (concurrency slots and the claim's fields),
``claim`` (``claimed``: the one claim of a queued call, for the
workers and for a call run where it was admitted; waiting for a slot), ``attempts``
(the retry loop and the executor call), ``redacting`` (every secret of the call
removed once from what it returns and logs), ``finish`` (the outcome written
once), ``run`` (one claimed call from executor to outcome) and ``reaper``. The
names callers use are re-exported here. The runner sends tasks (a re-queue, an
agent's webhook) through ``executions.services.task_queue``, which is below it;
how long a call may take is ``executions.services.budget``.
"""

from executions.services.runner.claim import claimed, execution_run
from executions.services.runner.finish import fail_internal
from executions.services.runner.reaper import executions_reap
from executions.services.runner.run import run_claimed

__all__ = [
    "claimed",
    "execution_run",
    "executions_reap",
    "fail_internal",
    "run_claimed",
]
