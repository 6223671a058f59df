"""Telling an agent that a call which waited for a human has ended: a signed POST to its webhook.

The body is JSON; ``X-ToolHub-Signature: t=<unix time>,v1=<hex>`` where
``v1 = HMAC-SHA256(secret, f"{t}.{raw body}")``. The receiver recomputes it
over the raw body and rejects old timestamps. Delivery goes through the
egress guard and is pinned to the checked address. A connection error, a
timeout or a 429/5xx answer is tried again (10 s, 1 min, 5 min: the task's
retries, queued by ``task_queue.notify_agent``); the final outcome is an audit event on the agent
(``webhook.delivered`` / ``webhook.failed``). Nothing of it affects the execution.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import time

import httpx

from executions import egress
from executions.models import Execution
from registry import crypto
from registry.services.audit import audit_record

logger = logging.getLogger(__name__)
TIMEOUT_SECONDS = 5.0


def signature(secret: str, timestamp: int, body: bytes) -> str:
    mac = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256)
    return f"t={timestamp},v1={mac.hexdigest()}"


def payload(execution: Execution) -> dict:
    return {
        "event": "execution.finished",
        "execution": {
            "id": str(execution.pk),
            "tool_id": str(execution.tool_id) if execution.tool_id else None,
            "tool_name": execution.tool_name,
            "status": execution.status,
            "error_type": execution.error_type,
            "error_message": execution.error_message,
            "finished_at": execution.finished_at.isoformat() if execution.finished_at else None,
            "links": {"self": f"/api/v1/executions/{execution.pk}"},
        },
    }


# Outcomes of one delivery attempt.
DELIVERED, RETRY, GAVE_UP = "delivered", "retry", "gave_up"
RETRY_STATUSES = {408, 425, 429, 500, 502, 503, 504}


def deliver(execution_id, *, attempt: int = 1, last_attempt: bool = True) -> str:
    """POST the outcome to the agent's webhook once.

    ``retry``: a connection error, a timeout or an answer worth another try
    (429, 5xx…) and ``last_attempt`` is false; the task tries again later. A
    final outcome (delivered, refused by the egress guard, a 4xx answer, the
    last attempt failed) is written to the audit log, without the secret.
    """
    execution = Execution.objects.select_related("agent").filter(pk=execution_id).first()
    if execution is None or execution.agent is None or not execution.agent.webhook_url:
        return GAVE_UP
    agent = execution.agent
    url = httpx.URL(agent.webhook_url)
    try:
        destination = egress.check_url(url)
    except Exception as exc:
        logger.warning("webhook for agent %s refused: %s", agent.name, exc)
        delivery_audit(execution, ok=False, attempt=attempt, problem=f"egress refused: {exc}")
        return GAVE_UP
    body = json.dumps(payload(execution), separators=(",", ":")).encode()
    secret = crypto.decrypt_json(agent.webhook_secret) if agent.webhook_secret else ""
    timestamp = int(time.time())
    headers = {"Content-Type": "application/json", "Host": url.netloc.decode()}
    if secret:
        headers["X-ToolHub-Signature"] = signature(secret, timestamp, body)
    address = destination.address
    pinned = url.copy_with(host=address if ":" not in address else f"[{address}]")
    try:
        with httpx.Client(timeout=TIMEOUT_SECONDS, follow_redirects=False) as client:
            response = client.post(
                pinned, content=body, headers=headers, extensions={"sni_hostname": url.host}
            )
    except httpx.HTTPError as exc:
        problem, retryable = exc.__class__.__name__, True
    else:
        if response.status_code < 300:
            delivery_audit(execution, ok=True, attempt=attempt, status=response.status_code)
            return DELIVERED
        problem = f"answered {response.status_code}"
        retryable = response.status_code in RETRY_STATUSES
    logger.warning("webhook for agent %s failed (attempt %d): %s", agent.name, attempt, problem)
    if retryable and not last_attempt:
        return RETRY
    delivery_audit(execution, ok=False, attempt=attempt, problem=problem)
    return GAVE_UP


def delivery_audit(
    execution: Execution, *, ok: bool, attempt: int, status=None, problem=""
) -> None:
    """The final outcome of telling the agent, as an audit event on the agent."""
    after = {
        "execution_id": str(execution.pk),
        "execution_status": execution.status,
        "attempts": attempt,
    }
    if status is not None:
        after["status_code"] = status
    if problem:
        after["problem"] = problem[:300]
    audit_record(
        actor=None,
        action="webhook.delivered" if ok else "webhook.failed",
        target=execution.agent,
        after=after,
    )
