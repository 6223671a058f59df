"""Command executor: one program, the caller's arguments as whole argv entries, in a sandbox.

Configs (``CONFIGS`` declares them; the registry checks each on save):

- ``argv`` (required): a JSON list; the first item is the absolute path of a
  program listed in ``TOOLHUB_COMMAND_ALLOWLIST`` (checked on save and at every
  run), the others its arguments. ``{name}`` is replaced by the input ``name``
  (a string as it is, anything else as JSON) and the item stays ONE argument:
  nothing is split, nothing goes through a shell. An item that is only a
  placeholder for an input not given is left out. ``{{`` and ``}}`` are braces.
  An input never becomes an option: an item it makes start with ``-`` is refused
  (``input_error``) unless ``end_of_options`` (the program reads ``--``, which
  then goes before the first item built from an input) or ``dash_values_at``
  (those argv positions) allows it.
- ``stdin``: the name of the input written to standard input.
- ``env``: variables ``TOOLHUB_COMMAND_ENV_VARS`` allows (never the loader's,
  an interpreter's, PATH, HOME, proxies); a secret config when it holds
  credentials (the runner then removes its values from every output and message).
- ``workspace_files``: relative path -> text (or exactly ``{name}``: an input),
  placed read-only in the workspace.
- ``timeout_seconds`` (the tool's timeout, never more), ``memory_mb`` (512,
  address space per process), ``cpu_seconds`` (30), ``max_processes`` (32),
  ``max_output_bytes`` (1 MiB per stream; the rest is read and dropped).

Output: ``{"stdout", "stderr", "exit_code", "duration_ms", "truncated"}``. A
non-zero exit is a ``tool_error`` carrying the output and the end of stderr (a
code above 128 is a code: bubblewrap reports a signal N as 128 + N too);
the deadline is a ``timeout`` (every process of the run is killed); a host
without bubblewrap or user namespaces refuses every call with
``sandbox_unavailable``, naming what is missing. The sandbox itself:
``executions.executors.command.sandbox``.
"""

from executions.executors.command.configs import CONFIGS, allowlist_problem
from executions.executors.command.executor import CommandExecutor
from executions.executors.command.sandbox import sandbox_problem

__all__ = ["CONFIGS", "CommandExecutor", "allowlist_problem", "sandbox_problem"]
