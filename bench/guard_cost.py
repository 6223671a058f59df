"""What the built-in guards cost per call, against what a call already costs.

Measures, in one process and alternating rounds, the CPU time of running each
built-in guard (``executions.guards.engine``, as the runner and admission run
them) on three outputs an HTTP tool returns, and compares it in the same run
with two baselines:

- ``redact``: the runner's removal of the tool's own secrets from the same
  output (``executions.redaction.redact`` with two secrets and their encoded
  forms), which every call already pays at the same place;
- ``direct``: one ``GET /ping`` to ``bench/upstream.py`` on a keep-alive httpx
  client (a call without ToolHub, the baseline of ``governed_vs_direct.py``).

Outputs: ``small`` (an API answer of ~0.3 KB with an e-mail address), ``medium``
(~12 KB: 100 records with names, e-mails, phone numbers, card and IBAN numbers),
``text`` (~100 KB of prose with a few of each). The before-guard (argument rules:
a condition and the size limits) runs on a call's arguments (~0.2 KB). Also the
one-off import time of the python-stdnum modules the PII guard loads.

    .venv/bin/python bench/guard_cost.py [--n 300] [--rounds 5] [--json FILE]

Needs nothing but this checkout. Prints a markdown table (median of the rounds).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import socket
import statistics
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

BENCH = Path(__file__).resolve().parent
sys.path.insert(0, str(BENCH.parent))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")

import logging  # noqa: E402

import django  # noqa: E402

django.setup()
logging.getLogger("httpx").setLevel(logging.WARNING)  # one line per request otherwise

import httpx  # noqa: E402

from executions.guards import engine  # noqa: E402
from executions.jsonsafe import json_safe  # noqa: E402
from executions.redaction import redact, with_encoded_forms  # noqa: E402

TOOL = SimpleNamespace(name="bench_tool", type="http")
SECRETS = with_encoded_forms(["s3cr3t-api-key-0123456789", "another-token-abcdef"])
STDNUM = [
    "stdnum.luhn",
    "stdnum.iban",
    "stdnum.us.ssn",
    "stdnum.es.dni",
    "stdnum.es.nie",
    "stdnum.it.codicefiscale",
    "stdnum.fr.nir",
    "stdnum.br.cpf",
    "stdnum.in_.aadhaar",
]


def guard(name: str, kind: str, stage: str, action: str, config: dict | None = None):
    return SimpleNamespace(
        pk=name, name=name, kind=kind, stage=stage, action=action, config=config or {}
    )


AFTER = {
    "pii": [guard("pii", "pii", "after", "redact")],
    "secrets": [guard("secrets", "secrets", "after", "redact")],
    "injection": [guard("injection", "injection", "after", "flag")],
}
AFTER["all three"] = [g for gs in AFTER.values() for g in gs]
ARGUMENT_RULES = [
    guard(
        "rules",
        "arguments",
        "before",
        "deny",
        {
            "condition": {"properties": {"path": {"pattern": "^/admin"}}, "required": ["path"]},
            "max_bytes": 65536,
            "max_string_length": 4096,
            "max_items": 1000,
        },
    )
]


def outputs() -> dict[str, object]:
    rng = random.Random(7)
    small = {
        "status_code": 200,
        "headers": {"content-type": "application/json", "date": "Thu, 26 Nov 2026 18:00:00 GMT"},
        "data": {"id": 42, "name": "Ada Lovelace", "email": "ada@example.com", "active": True},
    }
    people = [
        {
            "id": i,
            "name": f"Person {i}",
            "email": f"person{i}@example.org",
            "phone": f"+44 20 7946 {rng.randint(1000, 9999)}",
            "card": "4111 1111 1111 1111" if i % 10 == 0 else f"ref-{rng.randint(10**8, 10**9)}",
            "iban": "DE89 3704 0044 0532 0130 00" if i % 25 == 0 else "",
            "note": "Paid on time; no issues reported by the account manager.",
        }
        for i in range(100)
    ]
    medium = {"status_code": 200, "headers": {}, "data": {"results": people}}
    words = "the quarterly report lists revenue by region and the forecast for next year".split()
    prose = []
    for i in range(2000):
        prose.append(" ".join(rng.choice(words) for _ in range(8)) + ".")
        if i % 400 == 0:
            prose.append(
                "Contact jane.doe@example.com or +1 415 555 2671 (card 5500 0000 0000 0004)."
            )
    text = {"status_code": 200, "headers": {}, "data": " ".join(prose)}
    return {"small": small, "medium": medium, "text": text}


def cpu_us(function, n: int) -> float:
    start = time.process_time()
    for _ in range(n):
        function()
    return (time.process_time() - start) / n * 1e6


def direct_us(n: int) -> float:
    """Wall time of a keep-alive GET to bench/upstream.py (one thread: CPU of the client
    alone would understate what a call costs)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    upstream = subprocess.Popen(
        [sys.executable, str(BENCH / "upstream.py"), "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        with httpx.Client(base_url=f"http://127.0.0.1:{port}") as client:
            for _ in range(50):
                try:
                    client.get("/ping", params={"x": 1})
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            start = time.perf_counter()
            for i in range(n):
                client.get("/ping", params={"x": i})
            return (time.perf_counter() - start) / n * 1e6
    finally:
        upstream.terminate()
        upstream.wait(5)


def stdnum_import_ms() -> float:
    code = (
        "import time; t = time.perf_counter()\n"
        + "".join(f"import {m}\n" for m in STDNUM)
        + "print((time.perf_counter() - t) * 1000)"
    )
    runs = [float(subprocess.check_output([sys.executable, "-c", code])) for _ in range(3)]
    return statistics.median(runs)


def one_round(n: int, samples: dict[str, object]) -> dict[str, float]:
    results: dict[str, float] = {}
    arguments = {"path": "/reports/2026", "region": "emea", "limit": 50, "fields": ["a", "b"]}
    results["before: argument rules"] = cpu_us(
        lambda: engine.run_before(ARGUMENT_RULES, tool=TOOL, arguments=arguments, caller="b"), n
    )
    for label, output in samples.items():
        safe = json_safe(output)
        results[f"{label}: redact"] = cpu_us(lambda safe=safe: redact(safe, SECRETS), n)
        for name, guards in AFTER.items():
            results[f"{label}: {name}"] = cpu_us(
                lambda safe=safe, guards=guards: engine.run_after(
                    guards, tool=TOOL, caller="b", output=safe
                ),
                n,
            )
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    samples = outputs()
    sizes = {k: len(json.dumps(v)) for k, v in samples.items()}
    one_round(5, samples)  # warm up: patterns compiled, stdnum imported
    rounds = [one_round(args.n, samples) for _ in range(args.rounds)]
    median = {k: statistics.median(r[k] for r in rounds) for k in rounds[0]}
    direct = statistics.median(direct_us(max(args.n, 500)) for _ in range(3))
    imports = stdnum_import_ms()
    print(
        f"direct GET /ping (wall, keep-alive): {direct:.0f} µs; stdnum imports: {imports:.1f} ms once"
    )
    print(f"outputs: {', '.join(f'{k} {v / 1024:.1f} KB' for k, v in sizes.items())}\n")
    print("| output: guard | CPU µs per call | x redact of the same output | x direct call |")
    print("|---|---:|---:|---:|")
    for key, value in median.items():
        output = key.split(":")[0]
        base = median.get(f"{output}: redact")
        ratio = f"{value / base:.1f}" if base and not key.endswith("redact") else "—"
        print(f"| {key} | {value:.0f} | {ratio} | {value / direct:.2f} |")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"direct_us": direct, "stdnum_import_ms": imports, "cpu_us": median}, indent=2
            )
        )


if __name__ == "__main__":
    main()
