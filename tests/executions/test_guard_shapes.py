"""What the built-in output guards see, whatever shape an upstream gives its output.

Pure functions on outputs an upstream (or a hostile MCP server) may send: a
secret or personal datum is found wherever it sits (a dictionary key, a list under
a credential's field), and no output makes a guard's patterns take quadratic time.
"""

from __future__ import annotations

import time

from executions.guards.secrets import find_secrets

CARD = "4111111111111111"
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def _timed(function, output) -> float:
    started = time.perf_counter()
    function(output, {})
    return time.perf_counter() - started


def test_a_text_of_repeated_jwt_prefixes_is_scanned_in_linear_time():
    # Every "eyJ" used to rescan the rest of the text: 120 kB took seconds, 300 kB minutes.
    for output in ("eyJ" * 40_000, "-eyJ" * 30_000, "eyJaaaa.eyJ" * 12_000):
        assert _timed(find_secrets, output) < 1.5


def test_secret_shaped_strings_are_still_found_where_a_word_begins():
    text = f"x eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.abcdefghijklmnopqrstuv ({AWS_KEY})"
    assert sorted(f.label for f in find_secrets(text, {})) == ["aws_access_key", "jwt"]
    assert find_secrets("XAKIAIOSFODNN7EXAMPLE", {}) == []
