"""The worker side: claim an execution, run its executor, record the outcome.

``execution_run`` is idempotent: it claims the row with a conditional UPDATE
(``queued → running``) and does nothing when the claim fails, so a duplicate
or redelivered task for a running or finished execution is harmless. It runs
only a row that still carries the call its admission event recorded
(``integrity``): one rewritten in the database ends ``denied`` (``integrity_error``).
``executions_reap`` ends executions a dead worker left ``running`` and
re-queues admitted ones whose task was lost before it started.

One module per part: ``dispatcher`` (the task queue, given at start-up),
``budget`` (how long a call may take), ``slots`` (concurrency slots and the
claim's fields), ``claim`` (``claimed``: the one claim of a queued call, for the
workers and for a call run where it was admitted; waiting for a slot),
``attempts`` (the retry loop and the executor call), ``finish`` (the outcome
written once), ``run`` (one claimed call from executor to outcome) and
``reaper``. The names callers use are re-exported here.
"""

from executions.services.runner.budget import total_budget_seconds
from executions.services.runner.claim import claimed, execution_run
from executions.services.runner.dispatcher import Dispatcher, dispatcher_register
from executions.services.runner.finish import fail_internal
from executions.services.runner.reaper import executions_reap
from executions.services.runner.run import run_claimed

__all__ = [
    "Dispatcher",
    "claimed",
    "dispatcher_register",
    "execution_run",
    "executions_reap",
    "fail_internal",
    "run_claimed",
    "total_budget_seconds",
]
