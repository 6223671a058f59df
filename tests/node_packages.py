"""The node packages some tests run (tests/node: installed by scripts/test from its lock file),
and the one rule for when such a test may skip: only where node is absent and the run is
not CI's (CI=true, TOOLHUB_TEST_EXPECT_SERVICES=true), where they must run."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

NODE_DIR = Path(__file__).resolve().parent / "node"
IN_CI = (
    os.environ.get("CI", "").lower() == "true"
    or os.environ.get("TOOLHUB_TEST_EXPECT_SERVICES", "").lower() == "true"
)


def node_problem(package: str) -> str | None:
    """Why ``package`` of tests/node cannot run here, or None."""
    node = shutil.which("node")
    if node is None:
        return "node is not installed (apt-get install nodejs npm; .ci/run does)"
    if not (NODE_DIR / "node_modules" / package).is_dir():
        return (
            "tests/node has no node_modules: run `npm ci --prefix tests/node` (scripts/test does)"
        )
    version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
    major = int(version.strip().lstrip("v").split(".")[0] or 0)
    if major < 20:
        return f"node {version.strip()} is too old for tests/node's packages (20 or later)"
    return None


def require_node(package: str, what: str) -> None:
    """Skip (outside CI, without node) or fail saying why ``package`` cannot run."""
    problem = node_problem(package)
    if problem:
        if IN_CI or shutil.which("node"):
            pytest.fail(f"{what} need {package}: {problem}.")
        pytest.skip(problem)
