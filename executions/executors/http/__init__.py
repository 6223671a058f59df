"""The HTTP executor: one governed call to an HTTP API.

Configs (``call.configs``):

* ``base_url`` and/or ``endpoint`` (an absolute ``endpoint`` overrides
  ``base_url``; otherwise they are concatenated with one ``/``). ``{name}``
  placeholders are filled from the inputs (URL-encoded, ``/`` included) and the
  inputs they use are consumed.
* ``method`` (default GET), ``timeout_seconds`` (overrides the call's timeout).
* ``headers`` and ``query_params``: JSON objects (or JSON strings of them),
  always sent. A static query parameter wins over an input of the same name.
* ``auth_type``: ``bearer_token`` (the token in ``api_key``, as the seed
  contract says, or in its alias ``bearer_token``, which wins when both are
  set), ``api_key`` (``api_key``, header ``api_key_header``, default
  ``X-API-Key``) or ``basic_auth`` (``username``, ``password``).
* ``headers_input_map``: ``{"input": "Header-Name"}`` or
  ``{"input": {"header": "Authorization", "template": "Bearer {value}"}}``:
  the input is sent as that header instead of in the query/body, and its value
  is treated as a secret of this call.

Nothing is redacted here: the result is returned as the upstream gave it, with
the secrets the call resolved (``ExecutorResult.secrets_used``: headers rendered
from inputs, credentials in a templated URL); ``lent_secrets`` tells the runner
the authentication's before the call runs, and the runner removes them all.

``CONFIGS`` declares these keys and their values once: the executor reads them
through it, and the registry checks a config against it when it is saved.

The remaining inputs go to the query string for GET/HEAD/OPTIONS/DELETE and to
a JSON body for POST/PUT/PATCH (form-encoded when the static ``Content-Type``
header says ``application/x-www-form-urlencoded``).

Every connection goes through the egress guard (``executions.egress``) and is
pinned to the addresses it checked; redirects are followed here (at most
``MAX_REDIRECTS``), each hop checked again. Credentials are not forwarded to
another origin on a redirect.

Output: ``{"status_code", "data", "headers"}``. ``data`` is the parsed JSON
when the body is JSON, else its text (``None`` for an empty body). Text is read in
the declared charset, else UTF-8, else, for a textual media type (``text/*``,
JSON, XML, form data …), Latin-1: a text answer is never base64. Any other body
that is not UTF-8 (an image, a PDF) is base64, with ``"data_encoding": "base64"``
(output guards read it decoded: ``executions.guards.readings``). The body is
read as a stream and at most ``call.max_response_bytes + 1`` bytes are kept:
when the upstream sends more, ``data`` is the text of the first
``max_response_bytes`` bytes (never parsed as JSON, cut before any partial
secret), ``metadata["truncated"]`` is True and ``metadata["full_size"]`` is the
announced Content-Length when there is one. The pipeline decides what to do
with a truncated result.

The package, one concept a module: ``values`` (constants, the failure, values as
wire text), ``configs`` (the keys), ``auth``, ``request`` (building one request),
``pinned`` (httpcore's network backend, connecting only to checked addresses),
``pool`` (the transport: httpcore pools per checked address set), ``transport``
(the process-wide transport and default headers), ``sending`` (redirects),
``response`` (reading and interpreting the body), ``executor``.
"""

from executions.executors.http.auth import lent_secrets
from executions.executors.http.configs import CONFIGS, HeaderFromInput
from executions.executors.http.executor import HTTPExecutor
from executions.executors.http.response import _retry_after
from executions.executors.http.transport import close_transport, get_transport
from executions.executors.http.values import MAX_REDIRECTS, USER_AGENT

__all__ = [
    "CONFIGS",
    "MAX_REDIRECTS",
    "USER_AGENT",
    "HTTPExecutor",
    "HeaderFromInput",
    "_retry_after",
    "close_transport",
    "get_transport",
    "lent_secrets",
]
