"""The processes a benchmark starts, waiting for them, and stopping them on any exit."""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

from harness import ROOT

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class Processes:
    """Every process this run starts, each in its own session so its children stop with it."""

    def __init__(self, log_dir: Path, cwd: Path) -> None:
        self.log_dir = log_dir
        self.cwd = cwd
        self.started: list[tuple[str, subprocess.Popen, object]] = []

    def start(self, name: str, cmd: list[str], env: dict[str, str]) -> subprocess.Popen:
        log = open(self.log_dir / f"{name}.log", "wb")  # closed in stop_all
        proc = subprocess.Popen(
            cmd, cwd=self.cwd, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
        )
        self.started.append((name, proc, log))
        return proc

    def check_alive(self) -> None:
        for name, proc, _log in self.started:
            if proc.poll() is not None:
                raise RuntimeError(f"{name} exited with code {proc.returncode}")

    def stop(self, proc: subprocess.Popen, grace: float = 15.0) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(timeout=grace)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        # Children that outlived their leader are still in its process group.
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)

    def stop_all(self) -> None:
        for _name, proc, log in reversed(self.started):
            self.stop(proc)
            log.close()
        self.started.clear()

    def tails(self, lines: int = 25) -> str:
        out = []
        for name, _proc, _log in self.started:
            path = self.log_dir / f"{name}.log"
            if path.exists():
                text = path.read_text(errors="replace").splitlines()[-lines:]
                out.append(f"--- {name}.log (last {len(text)} lines)\n" + "\n".join(text))
        return "\n".join(out)


def _raise_interrupt(signum, frame):
    raise KeyboardInterrupt(f"signal {signum}")


def interrupt_on_stop_signals() -> None:
    """Ctrl-C, kill and a closed terminal all clean up (SIGINT too when it was inherited ignored)."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, _raise_interrupt)


def ignore_stop_signals() -> None:
    """A second Ctrl-C (or a signal sent to the whole process group) must not cut the cleanup short."""
    for signum in STOP_SIGNALS:
        signal.signal(signum, signal.SIG_IGN)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_until(what: str, check: Callable[[], bool], timeout: float, procs: Processes) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        procs.check_alive()
        with contextlib.suppress(Exception):
            if check():
                return
        time.sleep(0.1)
    raise RuntimeError(f"{what} not ready after {timeout:.0f} s")


def run_checked(cmd: list[str], env: dict[str, str], cwd: Path = ROOT) -> str:
    result = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RuntimeError(
            f"{' '.join(cmd)} failed ({result.returncode}):\n{result.stdout}\n{result.stderr}"
        )
    return result.stdout
