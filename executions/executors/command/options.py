"""The sandbox's command line: bubblewrap's options and the limits prlimit sets.

What each flag does, and why: docs/tool-types.md "Command tools".
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

SANDBOX_UID = 65534  # "nobody": inside the sandbox, and outside when the worker is root
WORKSPACE = "/workspace"
PRLIMIT = "/usr/bin/prlimit"
SYSTEM_DIRS = ("/usr",)
# On merged-/usr systems these are links into /usr; elsewhere they are bound read-only.
SYSTEM_LINKS = ("/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
# What programs need of /etc: the loader's cache, Debian's alternatives (/usr/bin/awk
# is a link through /etc/alternatives), the time zone. Never the whole of /etc.
ETC_FILES = ("/etc/ld.so.cache", "/etc/alternatives", "/etc/localtime")
BASE_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "HOME": WORKSPACE,
    "TMPDIR": "/tmp",  # noqa: S108 - the sandbox's own tmpfs
    "LANG": "C.UTF-8",
}


@dataclass(frozen=True)
class Limits:
    """The limits of one run (a command tool's configs, as the executor read them)."""

    timeout_seconds: float
    memory_mb: int
    cpu_seconds: int
    max_processes: int
    max_output_bytes: int
    workspace_mb: int


def _hidden_paths() -> list[str]:
    """ToolHub's own directories that a system directory holds (an image that installs
    ToolHub into /usr/local's site-packages, a virtualenv under /usr): each is covered
    by an empty read-only tmpfs in the sandbox."""
    packages = Path(__file__).resolve().parents[3]  # where toolhub, registry, executions are
    paths = {Path(settings.BASE_DIR), Path(getattr(settings, "VAR_DIR", settings.BASE_DIR))}
    paths.update(packages / name for name in ("toolhub", "registry", "executions"))
    if sys.prefix != sys.base_prefix:  # a virtualenv (not the system's Python itself)
        paths.add(Path(sys.prefix))
    hidden = []
    for path in sorted(p.resolve() for p in paths):
        inside = [d for d in SYSTEM_DIRS if Path(d) in path.parents]
        if inside and not any(Path(h) in path.parents for h in hidden):
            hidden.append(str(path))
    return hidden


def _system_binds() -> list[str]:
    args: list[str] = []
    for directory in SYSTEM_DIRS:
        args += ["--ro-bind", directory, directory]
    for link in SYSTEM_LINKS:
        if os.path.islink(link):
            args += ["--symlink", os.readlink(link), link]
        elif os.path.isdir(link):
            args += ["--ro-bind", link, link]
    for path in ETC_FILES:
        if os.path.exists(path):
            args += ["--ro-bind", path, path]
    for path in _hidden_paths():
        args += ["--tmpfs", path, "--remount-ro", path]
    return args


def bwrap_options(
    *,
    env: Mapping[str, str],
    files: Mapping[str, int],
    limits: Limits,
) -> list[str]:
    """bubblewrap's options: the namespaces, the file system, the environment.

    ``files`` maps workspace paths to file descriptors whose content is placed
    there read-only. The options reach bubblewrap through a file descriptor
    (``--args``), so the environment's values (secrets, perhaps) are in no
    command line the host's ``ps`` or the sandbox's ``/proc/1/cmdline`` shows.
    """
    workspace_bytes = limits.workspace_mb * 1024 * 1024
    args = [
        "--unshare-all",
        "--unshare-user",
        "--disable-userns",
        "--uid",
        str(SANDBOX_UID),
        "--gid",
        str(SANDBOX_UID),
        "--cap-drop",
        "ALL",
        "--die-with-parent",
        "--new-session",
        "--hostname",
        "sandbox",
        "--clearenv",
        *_system_binds(),
        "--proc",
        "/proc",
        "--dev",
        "/dev",
        "--size",
        str(workspace_bytes),
        "--tmpfs",
        "/tmp",  # noqa: S108 - the sandbox's own tmpfs
        "--size",
        str(workspace_bytes),
        "--tmpfs",
        WORKSPACE,
    ]
    for name, fd in files.items():
        parent = posix_parent(name)
        if parent:
            args += ["--dir", f"{WORKSPACE}/{parent}"]
        args += ["--perms", "0444", "--ro-bind-data", str(fd), f"{WORKSPACE}/{name}"]
    # The root and /dev (tmpfs bubblewrap made) read-only: only the workspace and
    # /tmp take writes. Device nodes (/dev/null) still work.
    args += ["--remount-ro", "/dev", "--remount-ro", "/", "--chdir", WORKSPACE]
    for name, value in {**BASE_ENV, **env}.items():
        args += ["--setenv", name, value]
    return args


def limited(argv: list[str], limits: Limits) -> list[str]:
    """``argv`` under prlimit (soft = hard limits), after ``--``: nothing in it is an
    option to bubblewrap or prlimit, and nothing in it is read by a shell."""
    return [
        "--",
        PRLIMIT,
        f"--as={limits.memory_mb * 1024 * 1024}",
        f"--cpu={limits.cpu_seconds}",
        # bubblewrap's init in the sandbox runs as the same uid: one process more.
        f"--nproc={limits.max_processes + 1}",
        f"--fsize={limits.workspace_mb * 1024 * 1024}",
        "--nofile=256",
        "--core=0",
        "--",
        *argv,
    ]


def posix_parent(name: str) -> str:
    return name.rsplit("/", 1)[0] if "/" in name else ""
