"""What the command sandbox costs per call: a program run directly vs under bubblewrap.

Runs each program N times directly (``subprocess.run``) and N times through the
command executor's sandbox (``executions.executors.command.sandbox.run``: the
namespaces, the mounts, prlimit, the capped reading), alternating, and prints
the median and p95 of each and their difference. Needs bubblewrap; nothing else.

    .venv/bin/python bench/command_sandbox.py            # N=200
    .venv/bin/python bench/command_sandbox.py --n 500
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")

import django

django.setup()

from executions.executors.command import sandbox  # noqa: E402

PROGRAMS = {
    "true": ["/usr/bin/true"],
    "python3 -c pass": ["/usr/bin/python3", "-c", "pass"],
}
LIMITS = sandbox.Limits(
    timeout_seconds=10,
    memory_mb=512,
    cpu_seconds=10,
    max_processes=32,
    max_output_bytes=1 << 20,
    workspace_mb=64,
)


def timed(function) -> float:
    started = time.perf_counter()
    function()
    return (time.perf_counter() - started) * 1000


def summary(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[int(len(ordered) * 0.95) - 1]
    return f"median {statistics.median(ordered):7.2f} ms  p95 {p95:7.2f} ms"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    problem = sandbox.sandbox_problem()
    if problem:
        sys.exit(f"no sandbox here: {problem}")
    for label, argv in PROGRAMS.items():
        direct, boxed = [], []
        for _ in range(args.n):
            direct.append(timed(lambda a=argv: subprocess.run(a, capture_output=True, check=True)))
            boxed.append(
                timed(lambda a=argv: sandbox.run(a, stdin=None, env={}, files={}, limits=LIMITS))
            )
        overhead = statistics.median(boxed) - statistics.median(direct)
        print(f"{label:16s} direct   {summary(direct)}")
        print(f"{label:16s} sandbox  {summary(boxed)}")
        print(f"{label:16s} overhead median {overhead:+.2f} ms per call (N={args.n})")


if __name__ == "__main__":
    main()
