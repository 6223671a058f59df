"""Running one program under bubblewrap, with limits, a deadline and capped output.

Every run gets new user, PID, network, IPC, UTS, mount and cgroup namespaces
(``--unshare-all --unshare-user``), no network at all (its own loopback only),
the system directories read-only (``/usr`` and the ``/bin``, ``/lib*`` links,
a few files of ``/etc``), a fresh tmpfs workspace and ``/tmp`` (gone when it
ends), its own ``/proc``, a minimal ``/dev``, uid/gid 65534 with no
capabilities, ``no_new_privs`` (bubblewrap sets it), no nested user
namespaces, a cleared environment and its own session; it is killed when the
worker dies. Resource limits (``prlimit`` inside the sandbox, soft = hard, so
the program cannot raise them): address space, CPU seconds, processes, file
size, open files (the command line: ``options``). At the wall-clock deadline
the sandbox's init (PID 1 of its namespace) is killed through a pidfd; the
kernel kills every other process of the namespace with it, and bubblewrap exits
once they are gone. Output is read as it comes, at most ``max_output_bytes`` of
each stream kept and the rest dropped.

RLIMIT_NPROC counts the processes of one real uid, per user namespace; the
kernel never enforces it for real uid 0. A worker running as root therefore
starts bubblewrap as uid/gid 65534 (``SANDBOX_UID``), so the limit holds; each
run has its own user namespace, so runs do not share their count.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
import signal
import subprocess
import time
from collections.abc import Mapping
from dataclasses import dataclass

from django.conf import settings

from executions.executors.command.options import (
    PRLIMIT,
    SANDBOX_UID,
    Limits,
    bwrap_options,
    limited,
)

READ_CHUNK = 65536
KILLED_BY_DEADLINE = -int(signal.SIGKILL)


class SandboxUnavailable(Exception):
    """This host cannot sandbox a command; the text names what is missing."""


@dataclass
class Outcome:
    """What a run gave: its output (capped), exit code, time, and how it ended."""

    stdout: bytes
    stderr: bytes
    exit_code: int
    duration_ms: float
    truncated: bool
    timed_out: bool


def _bwrap() -> str:
    return str(getattr(settings, "TOOLHUB_BWRAP", "/usr/bin/bwrap"))


def _runs_as() -> dict:
    """Popen arguments that drop root to ``SANDBOX_UID`` (RLIMIT_NPROC ignores uid 0)."""
    if os.geteuid() != 0:
        return {}
    return {"user": SANDBOX_UID, "group": SANDBOX_UID, "extra_groups": []}


def _data_fd(content: bytes) -> int:
    """An in-memory file holding ``content`` (bubblewrap copies it into the sandbox)."""
    fd = os.memfd_create("toolhub-command", os.MFD_CLOEXEC)
    _write_all(fd, content)
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


def _write_all(fd: int, content: bytes) -> None:
    view = memoryview(content)
    while view:
        written = os.write(fd, view)
        view = view[written:]


@dataclass
class Started:
    """A running sandbox: bubblewrap, and a handle on the sandbox's init (PID 1 of its
    namespace) when bubblewrap reported it."""

    proc: subprocess.Popen
    init: int | None  # a pidfd


def _spawn(argv: list[str], *, env, files: Mapping[str, bytes], limits: Limits, **popen):
    """Start bubblewrap (with an empty environment of its own: its init's
    ``/proc/1/environ`` is readable inside)."""
    fds = {name: _data_fd(content) for name, content in files.items()}
    info_read, info_write = os.pipe()
    options = [*bwrap_options(env=env, files=fds, limits=limits), "--info-fd", str(info_write)]
    options_fd = _data_fd(b"".join(o.encode("utf-8", "surrogatepass") + b"\0" for o in options))
    try:
        proc = subprocess.Popen(  # noqa: S603 - argv entries are data, never a shell
            [_bwrap(), "--args", str(options_fd), *limited(argv, limits)],
            pass_fds=(options_fd, info_write, *fds.values()),
            env={},
            start_new_session=True,
            close_fds=True,
            **_runs_as(),
            **popen,
        )
    finally:
        for fd in (options_fd, info_write, *fds.values()):
            os.close(fd)
    return Started(proc, _init_of(info_read))


def _init_of(info_read: int) -> int | None:
    """A pidfd of the sandbox's init, from what bubblewrap writes on ``--info-fd`` (it
    closes it then, or on failure). Killing that init kills every process of the run."""
    data = b""
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(info_read, selectors.EVENT_READ)
            while selector.select(timeout=10):
                chunk = os.read(info_read, 4096)
                if not chunk:
                    break
                data += chunk
    finally:
        os.close(info_read)
    try:
        pid = json.loads(data)["child-pid"]
        return os.pidfd_open(int(pid))
    except (ValueError, KeyError, TypeError, OSError):
        return None


def _probe(bwrap: str) -> str | None:
    """Start an empty sandbox once; what is missing when it cannot start."""
    if not os.access(bwrap, os.X_OK):
        return (
            f"bubblewrap is not installed at {bwrap} (Debian/Ubuntu package 'bubblewrap'; "
            "the path is the TOOLHUB_BWRAP setting)"
        )
    if not os.access(PRLIMIT, os.X_OK):
        return f"{PRLIMIT} is missing (Debian package 'util-linux'); it sets the sandbox's limits"
    limits = Limits(5, 256, 5, 4, 1024, 1)
    try:
        started = _spawn(
            ["/usr/bin/true"],
            env={},
            files={},
            limits=limits,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        proc = started.proc
        try:
            _, stderr = proc.communicate(timeout=10)
        finally:
            _kill(started)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"bubblewrap could not be started ({exc.__class__.__name__}: {exc})"
    if proc.returncode != 0:
        said = stderr.decode("utf-8", "replace").strip()[:300]
        if "Unknown option" in said:
            return f"bubblewrap at {bwrap} is too old (0.8 or later is needed; it said: {said})"
        return (
            "user namespaces are not available to bubblewrap here (it said: "
            f"{said or 'exit ' + str(proc.returncode)}); allow unprivileged user namespaces "
            "(sysctl user.max_user_namespaces, kernel.unprivileged_userns_clone, "
            "kernel.apparmor_restrict_unprivileged_userns; a container's seccomp profile)"
        )
    return None


SANDBOX_CHECK_SECONDS = 60
_last_check: dict[str, tuple[float, str | None]] = {}  # bwrap path -> (when, problem)


def sandbox_problem() -> str | None:
    """What this host lacks to sandbox a command (None when it can); checked at most
    once a minute."""
    bwrap, now = _bwrap(), time.monotonic()
    checked = _last_check.get(bwrap)
    if checked is None or now - checked[0] >= SANDBOX_CHECK_SECONDS:
        checked = _last_check[bwrap] = (now, _probe(bwrap))
    return checked[1]


def run(
    argv: list[str],
    *,
    stdin: bytes | None,
    env: Mapping[str, str],
    files: Mapping[str, bytes],
    limits: Limits,
    cancellation=None,
) -> Outcome:
    """Run ``argv`` in a fresh sandbox; raises ``SandboxUnavailable`` when none can start.
    ``cancellation`` (``executors.base.Cancellation``): cancelling it kills the run."""
    problem = sandbox_problem()
    if problem:
        raise SandboxUnavailable(problem)
    started = time.monotonic()
    sandbox = _spawn(
        argv,
        env=env,
        files=files,
        limits=limits,
        stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    proc = sandbox.proc
    forget = cancellation.on_cancel(lambda: _signal_kill(sandbox)) if cancellation else None
    try:
        out, err, truncated, timed_out = _communicate(proc, stdin, limits, started)
    finally:
        if forget is not None:
            forget()  # before _kill closes the init's pidfd, which the callback uses
        _kill(sandbox)
    return Outcome(
        stdout=out,
        stderr=err,
        exit_code=KILLED_BY_DEADLINE if timed_out else proc.returncode,
        duration_ms=(time.monotonic() - started) * 1000,
        truncated=truncated,
        timed_out=timed_out,
    )


def _signal_kill(sandbox: Started) -> None:
    """SIGKILL every process of the run, from another thread (a cancellation): the run's
    own thread then sees its streams close and reaps it (``_kill``)."""
    if sandbox.proc.poll() is not None:
        return
    if sandbox.init is not None:
        with contextlib.suppress(ProcessLookupError, OSError):
            signal.pidfd_send_signal(sandbox.init, signal.SIGKILL)
    with contextlib.suppress(ProcessLookupError, OSError):
        os.killpg(sandbox.proc.pid, signal.SIGKILL)


def _kill(sandbox: Started) -> None:
    """End a run for good: kill the sandbox's init (the kernel then kills every process
    of its PID namespace, and the init's exit waits for them), then bubblewrap's process
    group, and reap bubblewrap, which exits once its init is gone."""
    proc = sandbox.proc
    if proc.poll() is None:
        if sandbox.init is not None:
            with contextlib.suppress(ProcessLookupError):
                signal.pidfd_send_signal(sandbox.init, signal.SIGKILL)
            proc.wait()
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    if sandbox.init is not None:
        os.close(sandbox.init)
    proc.wait()
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None and not stream.closed:
            stream.close()


def _communicate(proc, stdin: bytes | None, limits: Limits, started: float):
    """Feed stdin and read both streams until they close or the deadline passes, keeping
    at most ``max_output_bytes`` of each (the rest is read and dropped)."""
    cap = limits.max_output_bytes
    kept = {proc.stdout: bytearray(), proc.stderr: bytearray()}
    truncated = False
    pending = memoryview(stdin or b"")
    deadline = started + limits.timeout_seconds
    with selectors.DefaultSelector() as selector:
        for stream in kept:
            os.set_blocking(stream.fileno(), False)
            selector.register(stream, selectors.EVENT_READ)
        if proc.stdin is not None:
            os.set_blocking(proc.stdin.fileno(), False)
            selector.register(proc.stdin, selectors.EVENT_WRITE)
        while selector.get_map():
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return bytes(kept[proc.stdout]), bytes(kept[proc.stderr]), truncated, True
            for key, _ in selector.select(timeout=min(remaining, 1.0)):
                stream = key.fileobj
                if stream is proc.stdin:
                    pending = _feed(selector, stream, pending)
                    continue
                chunk = _read(stream)
                if chunk is None:
                    continue
                if not chunk:
                    selector.unregister(stream)
                    continue
                room = cap - len(kept[stream])
                if len(chunk) > room:
                    truncated = True
                kept[stream] += chunk[: max(room, 0)]
    remaining = max(0.0, deadline - time.monotonic())
    try:
        proc.wait(timeout=remaining)
    except subprocess.TimeoutExpired:
        return bytes(kept[proc.stdout]), bytes(kept[proc.stderr]), truncated, True
    return bytes(kept[proc.stdout]), bytes(kept[proc.stderr]), truncated, False


def _read(stream) -> bytes | None:
    """The next chunk; ``b""`` at the end of the stream, None when nothing is there yet."""
    try:
        return os.read(stream.fileno(), READ_CHUNK)
    except BlockingIOError:
        return None
    except OSError:
        return b""


def _feed(selector, stream, pending: memoryview) -> memoryview:
    """Write what the pipe takes; close stdin once all is written or the program stops
    reading."""
    try:
        if pending:
            written = os.write(stream.fileno(), pending)
            pending = pending[written:]
    except BlockingIOError:
        return pending
    except (BrokenPipeError, OSError):
        pending = pending[:0]
    if not pending:
        selector.unregister(stream)
        stream.close()
    return pending
