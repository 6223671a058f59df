"""CPU seconds of each component of a run, read from /proc, and who holds which connection."""

from __future__ import annotations

import contextlib
import os

CLK_TCK = os.sysconf("SC_CLK_TCK")
COMPONENTS = ["gunicorn", "celery", "postgres", "pg exited", "redis", "upstream", "client", "other"]


def proc_stats() -> list[tuple[int, str, int, int, float, float]]:
    """(pid, comm, pgrp, ppid, cpu seconds, cpu seconds of reaped children) of every process."""
    rows = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                raw = handle.read()
        except OSError:
            continue
        comm = raw[raw.find("(") + 1 : raw.rfind(")")]
        fields = raw[raw.rfind(")") + 2 :].split()
        rows.append(
            (
                int(entry),
                comm,
                int(fields[2]),
                int(fields[1]),
                (int(fields[11]) + int(fields[12])) / CLK_TCK,
                (int(fields[13]) + int(fields[14])) / CLK_TCK,
            )
        )
    return rows


def _cmdline(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return ""


def _system_busy() -> float:
    """CPU seconds all cores spent busy since boot (every process, dead or alive)."""
    with open("/proc/stat") as handle:
        values = [int(v) for v in handle.readline().split()[1:]]
    idle = values[3] + (values[4] if len(values) > 4 else 0)
    return (sum(values[:8]) - idle) / CLK_TCK


def cpu_snapshot(groups: dict[str, int], db_name: str) -> dict[str, float]:
    """CPU seconds used so far by each component.

    Our process groups include their exited children (reaped by the group leader).
    ``postgres`` is the bench database's live backends and the server's own
    processes; ``pg exited`` is every backend that exited meanwhile (the
    postmaster reaps them: a connection opened per task shows here, but so do
    other databases' short sessions). ``other`` is everything else on the machine.
    """
    by_group = {pgid: name for name, pgid in groups.items()}
    totals = dict.fromkeys(COMPONENTS, 0.0)
    rows = proc_stats()
    postgres_pids = {pid for pid, comm, *_ in rows if comm.startswith("postgres")}
    for pid, comm, pgrp, ppid, seconds, children in rows:
        if pgrp in by_group:
            totals[by_group[pgrp]] += seconds + (children if pid == pgrp else 0.0)
        elif pid in postgres_pids:
            if ppid not in postgres_pids:  # the postmaster
                totals["postgres"] += seconds
                totals["pg exited"] += children
                continue
            line = _cmdline(pid)
            is_backend = "(" in line or "[local]" in line
            if not is_backend or f" {db_name} " in line:
                totals["postgres"] += seconds
        elif comm.startswith("redis-server"):
            totals["redis"] += seconds
    times = os.times()
    totals["client"] = times.user + times.system
    totals["other"] = _system_busy() - sum(totals.values())
    return totals


def connections_per_worker(port: int, master_pid: int) -> list[int]:
    """Established client connections held by each worker of a server (from /proc/net/tcp)."""
    inodes = set()
    with open("/proc/net/tcp") as handle:
        next(handle)
        for line in handle:
            parts = line.split()
            local_port = int(parts[1].split(":")[1], 16)
            if local_port == port and parts[3] == "01":
                inodes.add(parts[9])
    counts = []
    for pid, _comm, pgrp, _ppid, _cpu, _children in proc_stats():
        if pgrp != master_pid or pid == master_pid:
            continue
        held = 0
        with contextlib.suppress(OSError):
            for fd in os.listdir(f"/proc/{pid}/fd"):
                with contextlib.suppress(OSError):
                    link = os.readlink(f"/proc/{pid}/fd/{fd}")
                    if link.startswith("socket:[") and link[8:-1] in inodes:
                        held += 1
        counts.append(held)
    return sorted(counts, reverse=True)
