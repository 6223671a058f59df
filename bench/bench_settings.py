"""ToolHub's settings plus overrides, to measure a candidate settings change without editing it.

Used only when ``governed_vs_direct.py --set NAME=JSON`` is given: the overrides
arrive as a JSON object in ``TOOLHUB_BENCH_OVERRIDES``; a dotted name sets a key
inside a dict setting (``--set DATABASES.default.CONN_HEALTH_CHECKS=true``).

``--set BENCH_CELERY_CLOSE_OLD_CONNECTIONS=true`` is not a setting: it connects
Celery's ``task_prerun``/``task_postrun`` to Django's ``close_old_connections``
(what a request does), to measure that candidate change in the workers.
"""

import json
import os

from toolhub.settings import *  # noqa: F403
from toolhub.settings.execution import inline_wait_kinds

for _name, _value in json.loads(os.environ.get("TOOLHUB_BENCH_OVERRIDES") or "{}").items():
    _path = _name.split(".")
    if len(_path) == 1:
        globals()[_name] = _value
        continue
    _target = globals()[_path[0]]
    for _key in _path[1:-1]:
        _target = _target[_key]
    _target[_path[-1]] = _value

# TOOLHUB_INLINE_WAIT is a set of executor kinds: read --set TOOLHUB_INLINE_WAIT=false,
# =true, ="http,python" or a JSON list as the environment variable is read.
_inline = globals().get("TOOLHUB_INLINE_WAIT")
if isinstance(_inline, bool | str):
    TOOLHUB_INLINE_WAIT = inline_wait_kinds(str(_inline).split(","))
elif isinstance(_inline, list):
    TOOLHUB_INLINE_WAIT = inline_wait_kinds(_inline)

if globals().get("BENCH_CELERY_CLOSE_OLD_CONNECTIONS"):
    from celery.signals import task_postrun, task_prerun

    def _close_old_connections(**kwargs):
        from django.db import close_old_connections

        close_old_connections()

    task_prerun.connect(_close_old_connections, weak=False)
    task_postrun.connect(_close_old_connections, weak=False)
