"""DatabaseExecutor against a real PostgreSQL (its own throwaway database) and SQLite files.

PostgreSQL comes from ``DATABASE_URL`` when it points at PostgreSQL, else
127.0.0.1:5432 (user postgres). When it cannot be reached the PostgreSQL cases
are skipped, unless ``TOOLHUB_TEST_EXPECT_SERVICES=true`` (CI), where they fail.
"""

from __future__ import annotations

import base64
import os
import sqlite3
import time
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import psycopg
import pytest

from executions.executors.base import ErrorType, ToolCall
from executions.executors.database import (
    DatabaseExecutor,
    TemplateError,
    compile_query,
    parse_read_only,
)
from tests.executions.boundary import run_at_the_boundary

EXPECT_SERVICES = os.environ.get("TOOLHUB_TEST_EXPECT_SERVICES", "").lower() == "true"
SEED_ROWS = 25

INJECTIONS = [
    "O'Reilly",
    "' OR '1'='1",
    "1; DELETE FROM items",
    "x' -- comment",
    "x /* block */ y",
    "' UNION SELECT id, name, qty, category FROM items --",
    "'; DROP TABLE items; --",
    "%(name)s :name %s ? $1",
    '"; DROP TABLE items; --',
    "\\'; DROP TABLE items; --",
]


def _server_url() -> str:
    env = os.environ.get("DATABASE_URL", "")
    if env.startswith(("postgres://", "postgresql://")):
        return env
    return "postgresql://postgres@127.0.0.1:5432/postgres"


def _with_database(url: str, name: str) -> str:
    return urlsplit(url)._replace(path="/" + name).geturl()


# --------------------------------------------------------------------------- engines


class Engine:
    """A seeded database and a side channel to check it, outside the executor."""

    name: str
    url: str

    def execute(self, sql: str) -> None:
        raise NotImplementedError

    def scalar(self, sql: str):
        raise NotImplementedError

    def count(self, table: str) -> int:
        return self.scalar(f"SELECT count(*) FROM {table}")  # noqa: S608 - fixed test names

    def unique_table(self, columns: str = "id integer PRIMARY KEY, body text") -> str:
        table = f"t_{uuid.uuid4().hex[:12]}"
        self.execute(f"CREATE TABLE {table} ({columns})")
        return table


class PostgresEngine(Engine):
    """``url`` is what tools get: a role with rights on this database only (tools may
    not log in as a superuser); ``admin_url`` seeds and checks from the side."""

    name = "postgresql"

    def __init__(self, admin_url: str, url: str):
        self.admin_url = admin_url
        self.url = url

    def execute(self, sql: str) -> None:
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(sql)

    def scalar(self, sql: str):
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            return conn.execute(sql).fetchone()[0]

    def table_exists(self, table: str) -> bool:
        return self.scalar(f"SELECT to_regclass('public.{table}') IS NOT NULL")


class SqliteEngine(Engine):
    name = "sqlite"

    def __init__(self, path: Path):
        self.path = path
        self.url = f"sqlite:///{path}"

    def execute(self, sql: str) -> None:
        conn = sqlite3.connect(self.path)
        try:
            conn.executescript(sql)
            conn.commit()
        finally:
            conn.close()

    def scalar(self, sql: str):
        conn = sqlite3.connect(self.path)
        try:
            return conn.execute(sql).fetchone()[0]
        finally:
            conn.close()

    def table_exists(self, table: str) -> bool:
        return bool(
            self.scalar(
                f"SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = '{table}'"  # noqa: S608
            )
        )


SEED_SQL = """
CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL, qty integer NOT NULL, category text);
CREATE TABLE secrets_table (id integer PRIMARY KEY, token text NOT NULL);
INSERT INTO secrets_table VALUES (1, 'top-secret');
"""


def _seed_items(engine: Engine) -> None:
    values = ", ".join(
        f"({i}, 'Item {i}', {i * 10}, '{'even' if i % 2 == 0 else 'odd'}')"
        for i in range(1, SEED_ROWS + 1)
    )
    engine.execute(f"INSERT INTO items VALUES {values}")  # noqa: S608 - fixed test data


@pytest.fixture(scope="session")
def pg_engine():
    server = _server_url()
    admin_url = _with_database(server, "postgres")
    name = f"toolhub_dbexec_test_{uuid.uuid4().hex[:10]}"
    try:
        admin = psycopg.connect(admin_url, autocommit=True, connect_timeout=3)
    except psycopg.OperationalError as exc:
        if EXPECT_SERVICES:
            pytest.fail(f"PostgreSQL expected (CI) but not reachable: {exc}")
        pytest.skip(f"PostgreSQL not reachable at {urlsplit(admin_url).netloc}")
    try:
        admin.execute(f'CREATE DATABASE "{name}"')
        admin.execute(f'CREATE ROLE "{name}" LOGIN')
        database_admin = _with_database(server, name)
        with psycopg.connect(database_admin, autocommit=True) as conn:
            conn.execute(f'GRANT CREATE, USAGE ON SCHEMA public TO "{name}"')
            conn.execute(
                f'ALTER DEFAULT PRIVILEGES IN SCHEMA public GRANT ALL ON TABLES TO "{name}"'
            )
        tool_url = urlsplit(database_admin)._replace(
            netloc=f"{name}@{urlsplit(database_admin).hostname}:{urlsplit(database_admin).port or 5432}"
        )
        engine = PostgresEngine(database_admin, tool_url.geturl())
        with psycopg.connect(engine.admin_url, autocommit=True) as conn:
            for statement in SEED_SQL.strip().split(";\n"):
                if statement.strip():
                    conn.execute(statement)
        _seed_items(engine)
        yield engine
    finally:
        admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.execute(f'DROP ROLE IF EXISTS "{name}"')
        admin.close()


@pytest.fixture
def sqlite_engine(tmp_path):
    engine = SqliteEngine(tmp_path / "tool.db")
    engine.execute(SEED_SQL)
    _seed_items(engine)
    return engine


@pytest.fixture(params=["postgresql", "sqlite"])
def engine(request) -> Engine:
    return request.getfixturevalue(
        "pg_engine" if request.param == "postgresql" else "sqlite_engine"
    )


@pytest.fixture(autouse=True)
def _reachable(settings, tmp_path):
    """The test servers listen on 127.0.0.1 and the SQLite files live in tmp_path."""
    settings.TOOLHUB_EGRESS_ALLOW = ["127.0.0.1/32"]
    settings.TOOLHUB_SQLITE_DIRS = [str(tmp_path)]


def run(
    url: str | None,
    query: str,
    inputs: dict | None = None,
    *,
    timeout: float = 10,
    secrets: tuple[str, ...] = (),
    **configs,
):
    if url is not None:
        configs["connection_string"] = url
    configs["query_template"] = query
    call = ToolCall(
        tool_name="db_tool",
        tool_type="database",
        configs=configs,
        inputs=inputs or {},
        timeout_seconds=timeout,
        secret_values=secrets,
    )
    # As the pipeline sees it: the executor answers raw, the runner's one redaction
    # removes the call's secrets (tests/executions/boundary.py).
    return run_at_the_boundary(DatabaseExecutor(), call)


# --------------------------------------------------------------------------- template tokenizer


def test_compile_query_both_styles_for_both_drivers():
    template = "SELECT * FROM t WHERE a = :a AND b = %(b)s AND c = :a"
    pg = compile_query(template, "postgresql")
    assert pg.sql == "SELECT * FROM t WHERE a = %(a)s AND b = %(b)s AND c = %(a)s"
    assert pg.names == ("a", "b")
    lite = compile_query(template, "sqlite")
    assert lite.sql == "SELECT * FROM t WHERE a = :a AND b = :b AND c = :a"
    assert lite.first_keyword == "SELECT"


def test_compile_query_skips_literals_comments_and_casts():
    template = (
        "SELECT ':lit', \"col:x\", x::int, E'it\\'s :esc', $$ :dollar $$, $q$ %(d)s $q$, arr[i:j] "
        "-- :line\n/* :block /* nested :n */ */ FROM t WHERE name LIKE 'a%' AND v = :v"
    )
    compiled = compile_query(template, "postgresql")
    assert compiled.names == ("v",)
    assert "x::int" in compiled.sql
    assert "'a%%'" in compiled.sql  # psycopg needs every literal % doubled
    assert "$q$ %%(d)s $q$" in compiled.sql


def test_compile_query_percent_escapes():
    assert compile_query("SELECT 7 %% 3, '50%'", "sqlite").sql == "SELECT 7 % 3, '50%'"
    assert compile_query("SELECT 7 % 3", "postgresql").sql == "SELECT 7 %% 3"


def test_compile_query_sqlite_identifiers():
    compiled = compile_query("SELECT [a:b], `c:d` FROM t WHERE x = :x", "sqlite")
    assert compiled.names == ("x",)


@pytest.mark.parametrize(
    "template",
    ["SELECT 1; SELECT 2", "SELECT 'open", "SELECT /* open", "SELECT $a$ open", 'SELECT "open'],
)
def test_compile_query_refuses_bad_templates(template):
    with pytest.raises(TemplateError):
        compile_query(template, "postgresql")


def test_compile_query_allows_trailing_semicolon_and_comments():
    compiled = compile_query("SELECT :a; -- done\n/* bye */", "postgresql")
    assert compiled.names == ("a",)
    assert ";" not in compiled.sql


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, True),
        (True, True),
        ("true", True),
        ("anything", True),
        (1, True),
        (False, False),
        ("false", False),
        ("False", False),
        (0, False),
        ("0", False),
        ("off", False),
    ],
)
def test_parse_read_only(value, expected):
    assert parse_read_only(value) is expected


# --------------------------------------------------------------------------- reading


@pytest.mark.parametrize(
    "query",
    [
        "SELECT id, name, qty FROM items WHERE category = :cat AND qty >= :min_qty ORDER BY id",
        "SELECT id, name, qty FROM items WHERE category = %(cat)s AND qty >= %(min_qty)s ORDER BY id",
    ],
    ids=["colon", "pyformat"],
)
def test_parameters_in_both_styles(engine, query):
    result = run(engine.url, query, {"cat": "even", "min_qty": 200})
    assert result.ok, result.error_message
    assert result.output["columns"] == ["id", "name", "qty"]
    assert result.output["rows"] == [[i, f"Item {i}", i * 10] for i in (20, 22, 24)]
    assert result.output["row_count"] == 3
    assert result.output["truncated"] is False
    assert result.metadata["engine"] == engine.name
    assert result.metadata["read_only"] is True


@pytest.mark.parametrize(("max_rows", "returned", "truncated"), [(10, 10, True), (25, 25, False)])
def test_row_cap(engine, max_rows, returned, truncated):
    result = run(engine.url, "SELECT id FROM items ORDER BY id", max_rows=max_rows)
    assert result.ok
    assert result.output["row_count"] == returned
    assert result.output["rows"] == [[i] for i in range(1, returned + 1)]
    assert result.output["truncated"] is truncated


def test_default_row_cap_is_1000(engine):
    query = (
        "SELECT g FROM generate_series(1, 1500) AS g"
        if engine.name == "postgresql"
        else "WITH RECURSIVE c(g) AS (SELECT 1 UNION ALL SELECT g + 1 FROM c WHERE g < 1500) SELECT g FROM c"
    )
    result = run(engine.url, query)
    assert result.ok
    assert result.output["row_count"] == 1000
    assert result.output["truncated"] is True


def test_percent_signs_with_and_without_parameters(engine):
    plain = run(engine.url, "SELECT count(*) FROM items WHERE name LIKE 'Item 1%'")
    assert plain.ok, plain.error_message
    assert plain.output["rows"] == [[11]]  # 1, 10..19
    bound = run(
        engine.url,
        "SELECT count(*) FROM items WHERE name LIKE :pattern AND qty % 20 = 0",
        {"pattern": "Item 1%"},
    )
    assert bound.ok, bound.error_message
    assert bound.output["rows"] == [[5]]  # 10, 12, 14, 16, 18


def test_json_safe_types_postgresql(pg_engine):
    query = """
        SELECT 12345678901234567890.123456789::numeric AS big_numeric,
               DATE '2024-02-29' AS d,
               TIMESTAMPTZ '2024-03-01 12:30:00+00' AS ts,
               TIME '08:15:00' AS t,
               'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'::uuid AS u,
               '\\xdeadbeef'::bytea AS b,
               INTERVAL '1 day 2 hours 30 seconds' AS i,
               '{"k": [1, 2]}'::jsonb AS j,
               ARRAY[1, 2, 3] AS arr,
               true AS flag, 1.5::float8 AS f, NULL AS nothing
    """
    result = run(pg_engine.url, query)
    assert result.ok, result.error_message
    row = dict(zip(result.output["columns"], result.output["rows"][0], strict=True))
    assert row["big_numeric"] == "12345678901234567890.123456789"
    assert row["d"] == "2024-02-29"
    assert row["ts"].startswith("2024-03-01T") and row["ts"][-6] in "+-"
    assert row["t"] == "08:15:00"
    assert row["u"] == "a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11"
    assert base64.b64decode(row["b"]) == bytes.fromhex("deadbeef")
    assert row["i"] == 86400 + 2 * 3600 + 30
    assert row["j"] == {"k": [1, 2]}
    assert row["arr"] == [1, 2, 3]
    assert row["flag"] is True
    assert row["f"] == 1.5
    assert row["nothing"] is None


def test_json_safe_types_sqlite(sqlite_engine):
    result = run(sqlite_engine.url, "SELECT x'cafe' AS b, 2.5 AS r, NULL AS n, 'txt' AS s, 7 AS i")
    assert result.ok
    assert result.output["rows"] == [[base64.b64encode(b"\xca\xfe").decode(), 2.5, None, "txt", 7]]


def test_structured_inputs_are_bound_as_json(engine):
    query = (
        "SELECT count(*) FROM items WHERE id::text IN (SELECT jsonb_array_elements_text(:ids))"
        if engine.name == "postgresql"
        else "SELECT count(*) FROM items WHERE id IN (SELECT value FROM json_each(:ids))"
    )
    result = run(engine.url, query, {"ids": [1, 2, 3, 999]})
    assert result.ok, result.error_message
    assert result.output["rows"] == [[3]]


def test_null_input_binds_null(engine):
    result = run(engine.url, "SELECT count(*) FROM items WHERE category = :cat", {"cat": None})
    assert result.ok
    assert result.output["rows"] == [[0]]


# --------------------------------------------------------------------------- errors


def test_missing_placeholder_input(engine):
    result = run(engine.url, "SELECT * FROM items WHERE id = :id AND qty = %(qty)s", {"qty": 1})
    assert not result.ok
    assert result.error_type == ErrorType.INPUT
    assert "id" in result.error_message
    assert "qty" not in result.error_message


def test_multiple_statements_refused(engine):
    result = run(engine.url, "SELECT 1; DELETE FROM items")
    assert result.error_type == ErrorType.CONFIG
    assert engine.count("items") == SEED_ROWS


def test_sql_error_is_tool_error(engine):
    result = run(engine.url, "SELECT no_such_column FROM items")
    assert not result.ok
    assert result.error_type == ErrorType.TOOL
    assert "no_such_column" in result.error_message
    assert result.retryable is False


def test_missing_query_template_and_connection(engine):
    assert run(engine.url, "").error_type == ErrorType.CONFIG
    assert run(None, "SELECT 1").error_type == ErrorType.CONFIG
    assert run("mysql://u:p@h/db", "SELECT 1").error_type == ErrorType.CONFIG
    assert run(engine.url, "SELECT 1", max_rows=0).error_type == ErrorType.CONFIG
    assert run(engine.url, "SELECT 1", timeout_seconds="soon").error_type == ErrorType.CONFIG


def test_statement_timeout_postgresql(pg_engine):
    started = time.monotonic()
    result = run(pg_engine.url, "SELECT pg_sleep(:s)", {"s": 10}, timeout_seconds=0.5)
    assert time.monotonic() - started < 5
    assert not result.ok
    assert result.error_type == ErrorType.TIMEOUT
    assert result.retryable is False


def test_statement_timeout_postgresql_from_call_timeout(pg_engine):
    result = run(pg_engine.url, "SELECT pg_sleep(10)", timeout=0.5, read_only=False)
    assert result.error_type == ErrorType.TIMEOUT


def test_statement_timeout_sqlite(sqlite_engine):
    endless = (
        "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT count(*) FROM c"
    )
    started = time.monotonic()
    result = run(sqlite_engine.url, endless, timeout_seconds=0.3)
    assert time.monotonic() - started < 5
    assert result.error_type == ErrorType.TIMEOUT


def test_bad_connection_never_leaks_password():
    canary = "CanaryPw-7d1e5b"
    result = run(f"postgresql://postgres:{canary}@127.0.0.1:1/nodb", "SELECT 1", timeout=3)
    assert not result.ok
    assert result.error_type == ErrorType.CONNECTION
    assert result.retryable is True
    assert canary not in result.error_message


def test_connection_error_messages_are_redacted(pg_engine):
    canary = "CanaryPw-a91c02"
    missing_db = f"canary_missing_db_{uuid.uuid4().hex[:8]}"
    url = _with_database(pg_engine.url, missing_db).replace("postgres@", f"postgres:{canary}@", 1)
    result = run(url, "SELECT 1", secrets=(missing_db,))
    assert result.error_type == ErrorType.CONNECTION
    assert canary not in result.error_message
    assert missing_db not in result.error_message
    assert "[REDACTED]" in result.error_message


def test_a_superuser_or_a_role_with_server_powers_is_refused(pg_engine, settings):
    """read_only is no sandbox for them: pg_read_file, COPY … TO PROGRAM."""
    query = "SELECT pg_read_file('/etc/hostname') AS f"
    refused = run(pg_engine.admin_url, query)
    assert refused.error_type == ErrorType.CONFIG and "superuser" in refused.error_message
    role = urlsplit(pg_engine.url).username
    pg_engine.execute(f'GRANT pg_read_server_files TO "{role}"')
    try:
        powers = run(pg_engine.url, query)
        assert powers.error_type == ErrorType.CONFIG
        assert "pg_read_server_files" in powers.error_message
    finally:
        pg_engine.execute(f'REVOKE pg_read_server_files FROM "{role}"')
    # Membership in a superuser role (SET ROLE reaches it) or CREATEROLE (grants itself
    # the powers) counts too.
    pg_engine.execute(f'GRANT postgres TO "{role}"')
    try:
        member = run(pg_engine.url, query)
        assert member.error_type == ErrorType.CONFIG and "postgres" in member.error_message
    finally:
        pg_engine.execute(f'REVOKE postgres FROM "{role}"')
    pg_engine.execute(f'ALTER ROLE "{role}" CREATEROLE')
    try:
        assert run(pg_engine.url, query).error_type == ErrorType.CONFIG
    finally:
        pg_engine.execute(f'ALTER ROLE "{role}" NOCREATEROLE')
    # The tool's own role: what read_only means holds, and the file stays out of reach.
    plain = run(pg_engine.url, query)
    assert plain.error_type == ErrorType.TOOL and "permission denied" in plain.error_message
    # The operator may lift the rule.
    settings.TOOLHUB_DATABASE_ALLOW_SUPERUSER = True
    assert run(pg_engine.admin_url, "SELECT 1 AS one").ok


def test_connection_errors_never_name_the_user(pg_engine):
    user = f"canary_user_{uuid.uuid4().hex[:8]}"
    url = pg_engine.admin_url.replace("postgres@", f"{user}@", 1)
    result = run(url, "SELECT 1")
    assert result.error_type == ErrorType.CONNECTION
    assert user not in result.error_message and "[REDACTED]" in result.error_message


def test_sqlite_missing_file_is_connection_error(tmp_path):
    result = run(f"sqlite:///{tmp_path}/nope/none.db", "SELECT 1")
    assert result.error_type == ErrorType.CONNECTION
    writable = run(f"sqlite:///{tmp_path}/none.db", "SELECT 1", read_only=False)
    assert writable.error_type == ErrorType.CONNECTION
    assert not (tmp_path / "none.db").exists()  # rw mode never creates a file


def test_secret_values_redacted_from_output(engine):
    result = run(engine.url, "SELECT token FROM secrets_table", secrets=("top-secret",))
    assert result.ok
    assert result.output["rows"] == [["[REDACTED]"]]


# --------------------------------------------------------------------------- read-only


WRITE_ATTEMPTS = {
    "insert": "INSERT INTO items (id, name, qty) VALUES (999, 'x', 1)",
    "update": "UPDATE items SET qty = 0",
    "delete": "DELETE FROM items",
    "drop": "DROP TABLE items",
    "create": "CREATE TABLE intruder (a integer)",
    "create_temp": "CREATE TEMP TABLE intruder_tmp (a integer)",
    "insert_param": "INSERT INTO items (id, name, qty) VALUES (:id, 'x', 1)",
}


@pytest.mark.parametrize("attempt", sorted(WRITE_ATTEMPTS))
@pytest.mark.parametrize("read_only", [None, True, "true"])
def test_read_only_refuses_writes(engine, attempt, read_only):
    configs = {} if read_only is None else {"read_only": read_only}
    result = run(engine.url, WRITE_ATTEMPTS[attempt], {"id": 999}, **configs)
    assert not result.ok
    assert result.error_type == ErrorType.READ_ONLY, result.error_message
    assert result.error_message.startswith("tool is read-only: ")
    assert engine.table_exists("items")
    assert not engine.table_exists("intruder")
    assert engine.count("items") == SEED_ROWS
    assert engine.scalar("SELECT sum(qty) FROM items") == 10 * SEED_ROWS * (SEED_ROWS + 1) // 2


@pytest.mark.parametrize(
    "query",
    [
        "TRUNCATE items",
        "WITH gone AS (DELETE FROM items RETURNING id) SELECT count(*) FROM gone",
        "SELECT * FROM items FOR UPDATE",
    ],
)
def test_read_only_refuses_writes_postgresql_extra(pg_engine, query):
    result = run(pg_engine.url, query)
    assert result.error_type == ErrorType.READ_ONLY, result.error_message
    assert pg_engine.count("items") == SEED_ROWS


@pytest.mark.parametrize("read_only", [True, False])
def test_sqlite_denies_attach(sqlite_engine, tmp_path, read_only):
    """ATTACH would open or create any file the worker may write, writable or not."""
    result = run(
        sqlite_engine.url,
        f"ATTACH DATABASE '{tmp_path}/other.db' AS other",
        read_only=read_only,
    )
    assert not result.ok
    assert not (tmp_path / "other.db").exists()


# --------------------------------------------------------------------------- writes allowed


@pytest.mark.parametrize("flag", [False, "false", 0])
def test_writes_when_read_only_false(engine, flag):
    table = engine.unique_table()
    insert = run(
        engine.url,
        f"INSERT INTO {table} (id, body) VALUES (:id, :body)",  # noqa: S608 - test table name
        {"id": 1, "body": "hello"},
        read_only=flag,
    )
    assert insert.ok, insert.error_message
    assert insert.output == {"columns": [], "rows": [], "row_count": 1, "truncated": False}
    assert insert.metadata["read_only"] is False
    assert engine.count(table) == 1  # committed
    update = run(engine.url, f"UPDATE {table} SET body = 'x'", read_only=flag)  # noqa: S608
    assert update.output["row_count"] == 1


def test_insert_returning_when_writes_allowed(engine):
    table = engine.unique_table()
    result = run(
        engine.url,
        f"INSERT INTO {table} (id, body) VALUES (7, :b) RETURNING id, body",  # noqa: S608
        {"b": "back"},
        read_only="false",
    )
    assert result.ok, result.error_message
    assert result.output["rows"] == [[7, "back"]]
    assert engine.count(table) == 1


def test_ddl_when_writes_allowed(engine):
    name = f"made_{uuid.uuid4().hex[:8]}"
    result = run(engine.url, f"CREATE TABLE {name} (a integer)", read_only=False)
    assert result.ok, result.error_message
    assert engine.table_exists(name)


def test_failed_write_rolls_back(engine):
    table = engine.unique_table()
    engine.execute(f"INSERT INTO {table} VALUES (1, 'a')")  # noqa: S608
    result = run(engine.url, f"INSERT INTO {table} VALUES (2, 'b'), (1, 'dup')", read_only=False)  # noqa: S608
    assert result.error_type == ErrorType.TOOL
    assert engine.count(table) == 1


# --------------------------------------------------------------------------- injection


@pytest.mark.parametrize("payload", INJECTIONS)
def test_injection_in_filter_matches_nothing(engine, payload):
    result = run(
        engine.url,
        "SELECT id, name FROM items WHERE name = :name OR category = %(cat)s",
        {"name": payload, "cat": payload},
    )
    assert result.ok, result.error_message
    assert result.output["rows"] == []
    assert engine.table_exists("items")
    assert engine.count("items") == SEED_ROWS


@pytest.mark.parametrize("payload", INJECTIONS)
def test_injection_comes_back_as_literal(engine, payload):
    result = run(engine.url, "SELECT :a AS a, %(b)s AS b", {"a": payload, "b": payload})
    assert result.ok, result.error_message
    assert result.output["rows"] == [[payload, payload]]
    assert engine.count("items") == SEED_ROWS


@pytest.mark.parametrize("payload", INJECTIONS)
def test_injection_stored_verbatim_when_writes_allowed(engine, payload):
    table = engine.unique_table()
    result = run(
        engine.url,
        f"INSERT INTO {table} (id, body) VALUES (:id, :body)",  # noqa: S608
        {"id": 1, "body": payload},
        read_only=False,
    )
    assert result.ok, result.error_message
    readback = run(engine.url, f"SELECT body FROM {table}")  # noqa: S608
    assert readback.output["rows"] == [[payload]]
    assert engine.table_exists("items")
    assert engine.count("items") == SEED_ROWS


def test_injection_in_numeric_input_is_an_error_not_sql(pg_engine):
    result = run(pg_engine.url, "SELECT * FROM items WHERE id = :id", {"id": "1 OR 1=1"})
    assert result.error_type == ErrorType.TOOL  # invalid integer, bound as data
    assert pg_engine.count("items") == SEED_ROWS


# --------------------------------------------------------------------------- aliases


def test_connection_alias(settings, engine):
    settings.TOOLHUB_DATABASE_ALIASES = {"reporting": engine.url}
    result = run(None, "SELECT count(*) FROM items", connection_alias="reporting")
    assert result.ok, result.error_message
    assert result.output["rows"] == [[SEED_ROWS]]


def test_unknown_alias_and_both_sources(settings, engine):
    settings.TOOLHUB_DATABASE_ALIASES = {"reporting": engine.url}
    unknown = run(None, "SELECT 1", connection_alias="nope")
    assert unknown.error_type == ErrorType.CONFIG
    assert "nope" in unknown.error_message
    both = run(engine.url, "SELECT 1", connection_alias="reporting")
    assert both.error_type == ErrorType.CONFIG


def test_alias_password_is_redacted(settings):
    canary = "AliasCanary-55e1"
    settings.TOOLHUB_DATABASE_ALIASES = {"bad": f"postgresql://postgres:{canary}@127.0.0.1:1/x"}
    result = run(None, "SELECT 1", connection_alias="bad", timeout=3)
    assert result.error_type == ErrorType.CONNECTION
    assert canary not in result.error_message


# --------------------------------------------------------------------------- where a tool may connect


def _own_database_url() -> str:
    from django.db import connection

    db = connection.settings_dict
    host, port = db.get("HOST") or "127.0.0.1", db.get("PORT") or 5432
    return f"postgresql://{db.get('USER') or 'postgres'}@{host}:{port}/{db['NAME']}"


@pytest.mark.django_db
def test_own_database_is_refused_even_where_egress_is_allowed(settings, pg_engine):
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        pytest.skip("SQLite: test_own_sqlite_file_is_refused (the test database is in memory)")
    url = _own_database_url()
    for variant in (url, url.replace("@127.0.0.1:", "@localhost:")):
        result = run(variant, "SELECT session_key FROM django_session")
        assert not result.ok and result.error_type == ErrorType.EGRESS_DENIED, variant
        assert "ToolHub's database" in result.error_message
    # Another database of the same server stays reachable where egress allows it.
    assert run(_with_database(pg_engine.url, "postgres"), "SELECT 1 AS one").ok


@pytest.mark.django_db
def test_own_database_is_refused_through_an_alias_too(settings):
    # An alias is the operator's and skips the egress guard, not this rule: its
    # target would be ToolHub's sessions, users and audit log.
    if "postgresql" not in settings.DATABASES["default"]["ENGINE"]:
        pytest.skip("SQLite: test_own_sqlite_file_is_refused covers aliases of files")
    url = _own_database_url()
    own = settings.DATABASES["default"]
    user = own.get("USER") or "postgres"
    variants = {
        "same": url,
        "localhost": url.replace("@127.0.0.1:", "@localhost:"),
        "socket": f"postgresql://{user}@/{own['NAME']}?host=/var/run/postgresql",
    }
    settings.TOOLHUB_DATABASE_ALIASES = variants
    settings.TOOLHUB_EGRESS_ALLOW = []
    for alias in variants:
        result = run(None, "SELECT username FROM auth_user", connection_alias=alias)
        assert not result.ok and result.error_type == ErrorType.EGRESS_DENIED, alias
        assert "ToolHub's database" in result.error_message
    # Another database of the same server stays the operator's choice.
    settings.TOOLHUB_DATABASE_ALIASES = {"other": url.rsplit("/", 1)[0] + "/postgres"}
    assert run(None, "SELECT 1 AS one", connection_alias="other").ok


@pytest.mark.filterwarnings("ignore:Overriding setting DATABASES")
def test_own_sqlite_file_is_refused(settings, tmp_path):
    own = tmp_path / "toolhub.sqlite3"
    sqlite3.connect(own).close()
    settings.DATABASES = {
        **settings.DATABASES,
        "extra": {"ENGINE": "django.db.backends.sqlite3", "NAME": own},
    }
    for variant in (f"sqlite:///{own}", f"sqlite:///{tmp_path}/./x/../toolhub.sqlite3"):
        result = run(variant, "SELECT 1")
        assert result.error_type == ErrorType.EGRESS_DENIED, variant
        assert "ToolHub's database" in result.error_message


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://postgres@127.0.0.1:5432/postgres", "is a loopback address"),
        ("postgresql://postgres@10.1.2.3:5432/db", "is a private address"),
        ("postgresql://postgres@169.254.169.254/db", "metadata"),
        ("postgresql://postgres@2130706433:5432/postgres", "loopback"),
        ("postgresql://postgres@[::1]:5432/postgres", "loopback"),
        ("postgresql:///postgres", "names no host"),
        ("postgresql://postgres@%2Fvar%2Frun%2Fpostgresql/postgres", "Unix socket"),
        ("postgresql://postgres@/postgres?host=/var/run/postgresql", "Unix socket"),
        ("postgresql://postgres@example.invalid/db?hostaddr=127.0.0.1", "loopback"),
    ],
)
def test_postgresql_targets_go_through_the_egress_guard(settings, url, message):
    settings.TOOLHUB_EGRESS_ALLOW = []
    result = run(url, "SELECT 1")
    assert not result.ok and result.error_type == ErrorType.EGRESS_DENIED, result
    assert message in result.error_message


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("postgresql://a@h1:5432,h2:5432/db", "single host"),
        ("postgresql://a@127.0.0.1/db?service=mine", "may not set 'service'"),
        ("postgresql://a@127.0.0.1/db?passfile=/etc/shadow", "may not set 'passfile'"),
    ],
)
def test_postgresql_connection_strings_name_one_tcp_server(url, message):
    result = run(url, "SELECT 1")
    assert result.error_type == ErrorType.CONFIG and message in result.error_message


def test_postgresql_connection_is_pinned_to_the_checked_address(pg_engine, monkeypatch):
    from executions import egress

    monkeypatch.setattr(
        egress.resolution,
        "_resolve",
        lambda host, port: ("127.0.0.1",) if host == "db.test" else (),
    )
    url = pg_engine.url.replace("@127.0.0.1:", "@db.test:")
    result = run(url, "SELECT inet_server_addr()::text AS addr")
    assert result.ok, result.error_message
    assert result.output["rows"] == [["127.0.0.1/32"]]


def test_sqlite_files_only_under_the_allowed_directories(settings, sqlite_engine, tmp_path):
    assert run(sqlite_engine.url, "SELECT count(*) FROM items").ok
    outside = tmp_path.parent / f"outside-{uuid.uuid4().hex[:6]}.db"
    sqlite3.connect(outside).close()
    try:
        for url in (f"sqlite:///{outside}", f"sqlite:///{tmp_path}/../{outside.name}"):
            result = run(url, "SELECT 1")
            assert result.error_type == ErrorType.EGRESS_DENIED, url
            assert "TOOLHUB_SQLITE_DIRS" in result.error_message
        settings.TOOLHUB_SQLITE_DIRS = []
        result = run(sqlite_engine.url, "SELECT 1")
        assert result.error_type == ErrorType.EGRESS_DENIED
        assert "none is set" in result.error_message
    finally:
        outside.unlink()


def test_an_alias_is_the_operators_choice(settings, sqlite_engine):
    settings.TOOLHUB_SQLITE_DIRS = []
    settings.TOOLHUB_EGRESS_ALLOW = []
    settings.TOOLHUB_DATABASE_ALIASES = {"reporting": sqlite_engine.url}
    result = run(None, "SELECT count(*) AS n FROM items", connection_alias="reporting")
    assert result.ok, result.error_message
