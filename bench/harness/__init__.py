"""What the benchmarks share: paths, the processes they start, PostgreSQL, the machine.

The entry scripts in ``bench/`` run with ``bench/`` first on ``sys.path`` (as
``python bench/SCRIPT.py`` does), so this package is imported as ``harness``.
"""

from __future__ import annotations

from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent
ROOT = BENCH.parent
