"""The triggers that move the registry generation, declared once, and put back after every migrate.

Each process keeps what a call reads from the registry in memory under the
registry generation (``registry/snapshot.py``); database triggers give the
generation a new value in the same statement as any write to the tables below.
A trigger that is missing means a governance change (an unticked *Is active*, a
ticked *Requires approval*) is ignored by calls until a restart.

A migration can drop them without saying so: SQLite rebuilds a table for many
schema changes (a new column with a default, a changed constraint), and the
rebuilt table has no triggers; PostgreSQL drops a column trigger with its
column. So the registry app installs the triggers again after every ``migrate``
that leaves it at its latest migration (``post_migrate``, ``registry/apps.py``),
and ``tests/registry/test_generation_triggers.py`` checks, on both backends,
that every table here has its triggers after all migrations.

``WATCHED`` tables bump on every write. ``PARTIAL`` tables bump only on the
writes a call depends on: (table, whether an INSERT bumps, the columns whose
UPDATE bumps). A new token needs no bump (unknown tokens are never kept); token
``last_used_at``, ``last_login`` and an MCP server's sync status are written on
ordinary requests and change no decision.

Migrations 0007, 0010 and 0017 keep their own copies of what they installed at the
time; this module is the current truth, and a migration that changes a watched
table's columns changes it here too. Migration 0023 installs this module's set, so
such a change must keep a migrate from scratch working (the trigger tests migrate a
new database on both backends, so a break shows there).
"""

from __future__ import annotations

WATCHED = (
    "registry_tool",
    "registry_toolparameter",
    "registry_toolconfig",
    "registry_ratelimitrule",
    "registry_toolgrant",
    "registry_toolgroupobjectpermission",
    "registry_tooluserobjectpermission",
    "registry_agent",
    "registry_guard",
    "auth_group",
    "auth_group_permissions",
    "auth_user_groups",
    "auth_user_user_permissions",
    # A withdrawn or narrowed consent: the tokens it covered act for no one from then on.
    "registry_consent",
)
PARTIAL = (
    ("registry_apitoken", False, ("user_id", "token_hash", "expires_at", "revoked_at")),
    ("auth_user", True, ("username", "is_active", "is_superuser", "is_staff")),
    # OAuth access tokens are kept like API tokens: revoking one (a consent withdrawn, a
    # refresh rotated, RFC 7009) deletes it, and the next call must not find it kept.
    ("oauth2_provider_accesstoken", False, ("user_id", "application_id", "expires", "scope")),
    (
        "oauth2_provider_application",
        False,
        ("client_id", "user_id", "authorization_grant_type", "name"),
    ),
    (
        "registry_mcpserver",
        True,
        (
            "name",
            "transport",
            "url",
            "command",
            "args",
            "encrypted_env",
            "encrypted_auth_token",
            "token_env_var",
            "tools_allowed",
            "tools_denied",
            "timeout_seconds",
            "max_concurrency",
            "is_enabled",
        ),
    ),
)

PG_NAME = "toolhub_registry_changed"
_SQLITE_BUMP = "UPDATE toolhub_registry_generation SET value = random() WHERE id = 1;"


def _sqlite_events() -> list[tuple[str, list[str]]]:
    events = [(table, ["INSERT", "UPDATE", "DELETE"]) for table in WATCHED]
    events += [
        (table, [*(["INSERT"] if on_insert else []), "DELETE", f"UPDATE OF {', '.join(columns)}"])
        for table, on_insert, columns in PARTIAL
    ]
    return events


def _sqlite_names(table: str, count: int) -> list[str]:
    return [f"{PG_NAME}_{table}_{n}" for n in range(count)]


def _pg_statements() -> list[tuple[str, str]]:
    statements = []
    whole = [(table, "INSERT OR UPDATE OR DELETE OR TRUNCATE") for table in WATCHED]
    parts = [
        (
            table,
            ("INSERT OR " if on_insert else "")
            + f"DELETE OR TRUNCATE OR UPDATE OF {', '.join(columns)}",
        )
        for table, on_insert, columns in PARTIAL
    ]
    for table, events in whole + parts:
        statements.append((table, f"DROP TRIGGER IF EXISTS {PG_NAME} ON {table}"))
        statements.append(
            (
                table,
                f"CREATE TRIGGER {PG_NAME} AFTER {events} ON {table} "
                f"FOR EACH STATEMENT EXECUTE FUNCTION {PG_NAME}()",
            )
        )
    return statements


def _sqlite_statements() -> list[tuple[str, str]]:
    statements = []
    for table, kinds in _sqlite_events():
        for name, kind in zip(_sqlite_names(table, len(kinds)), kinds, strict=True):
            statements.append((table, f"DROP TRIGGER IF EXISTS {name}"))
            statements.append(
                (table, f"CREATE TRIGGER {name} AFTER {kind} ON {table} BEGIN {_SQLITE_BUMP} END")
            )
    return statements


def install(connection) -> None:
    """(Re)create every trigger on ``connection``'s database; idempotent, in one transaction.

    Needs the generation table and, on PostgreSQL, its function (migration 0007).
    """
    statements = {"postgresql": _pg_statements, "sqlite": _sqlite_statements}.get(
        connection.vendor, list
    )()
    # A migration that runs before another app's tables exist (a migrate from scratch)
    # installs what it can; post_migrate installs the rest once every app has migrated.
    tables = set(connection.introspection.table_names())
    with connection.cursor() as cursor:
        for table, statement in statements:
            if table in tables:
                cursor.execute(statement)


def missing(connection) -> list[str]:
    """The triggers this module declares that the database does not have (``table: trigger``)."""
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname = %s AND NOT t.tgisinternal",
                [PG_NAME],
            )
            present = {row[0] for row in cursor.fetchall()}
            expected = {f"{t}: {PG_NAME}": t for t in (*WATCHED, *(t for t, _, _ in PARTIAL))}
            return sorted(name for name, table in expected.items() if table not in present)
        if connection.vendor == "sqlite":
            cursor.execute("SELECT tbl_name, name FROM sqlite_master WHERE type = 'trigger'")
            present = {(table, name) for table, name in cursor.fetchall()}
            expected = [
                (table, name)
                for table, kinds in _sqlite_events()
                for name in _sqlite_names(table, len(kinds))
            ]
            return [f"{table}: {name}" for table, name in expected if (table, name) not in present]
    return []
