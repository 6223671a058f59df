"""The one way an execution changes status (executions.services.transitions)."""

import uuid

import pytest

from executions.models import STATUS_TRANSITIONS, ExecutionStatus
from executions.services import transitions


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (ExecutionStatus.SUCCEEDED, ExecutionStatus.QUEUED),
        (ExecutionStatus.PENDING_APPROVAL, ExecutionStatus.SUCCEEDED),
        (ExecutionStatus.RUNNING, ExecutionStatus.QUEUED),
    ],
)
def test_a_status_change_the_state_machine_does_not_have_is_refused_before_any_write(before, after):
    assert after not in STATUS_TRANSITIONS.get(before, ())
    with pytest.raises(transitions.IllegalTransition):
        transitions.execution_move(uuid.uuid4(), from_statuses=[before], to=after)


def test_services_send_tasks_by_name_and_never_import_the_tasks_module():
    import ast
    from pathlib import Path

    import executions.services

    folder = Path(executions.services.__file__).parent
    importers = [
        path.name
        for path in folder.glob("*.py")
        for node in ast.walk(ast.parse(path.read_text()))
        if (isinstance(node, ast.ImportFrom) and node.module == "executions.tasks")
        or (isinstance(node, ast.Import) and any(a.name == "executions.tasks" for a in node.names))
    ]
    assert importers == []
