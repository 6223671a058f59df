"""What a report says about where it ran: the machine and the revision of the code."""

from __future__ import annotations

import contextlib
import subprocess

from harness import ROOT


def cpu_model() -> str:
    with contextlib.suppress(OSError), open("/proc/cpuinfo") as handle:
        for line in handle:
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return ""


def mem_total_kib() -> int | None:
    with contextlib.suppress(OSError), open("/proc/meminfo") as handle:
        return int(handle.readline().split()[1])
    return None


def git(*args: str) -> str:
    """The stripped output of a git command run in this checkout ("" when it fails)."""
    return subprocess.run(
        ["git", "-C", str(ROOT), *args], capture_output=True, text=True, check=False
    ).stdout.strip()
