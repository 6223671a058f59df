"""A registry generation the database changes on every governance write.

One row, ``toolhub_registry_generation(id=1, value)``. Triggers on every table
an execution decision reads (tools, parameters, configs, rate limits, grants,
roles and memberships, users, agents, tokens, MCP servers) set ``value`` to a
new random number in the same statement, inside the writer's transaction.
Processes keep what they read from those tables in memory under the
generation they saw, and read the generation (one indexed row) before using
it: a change committed by any process, through the services, the admin, a
bulk update or raw SQL, is seen by the next request. A random value (not a
counter) so that a rolled-back transaction's generation can never come back
and match what was cached inside it.

Token ``last_used_at``, user ``last_login`` and MCP sync-status writes do not
bump it (they change nothing a decision depends on and happen on ordinary
requests), nor does a new token. Writers of the watched tables queue on the
generation row until they commit: keep those transactions short.
"""

from django.db import migrations

WATCHED = [
    "registry_tool",
    "registry_toolparameter",
    "registry_toolconfig",
    "registry_ratelimitrule",
    "registry_toolgrant",
    "registry_toolgroupobjectpermission",
    "registry_tooluserobjectpermission",
    "registry_agent",
    "auth_group",
    "auth_group_permissions",
    "auth_user_groups",
    "auth_user_user_permissions",
]
# Tables where only some writes matter: (table, whether an INSERT bumps, columns
# whose UPDATE bumps). A new token needs no bump (unknown tokens are never kept); an
# MCP server's sync status is not what a call reads.
PARTIAL = [
    ("registry_apitoken", False, ["user_id", "token_hash", "expires_at", "revoked_at"]),
    ("auth_user", True, ["username", "is_active", "is_superuser", "is_staff"]),
    (
        "registry_mcpserver",
        True,
        [
            "name",
            "transport",
            "url",
            "command",
            "args",
            "env",
            "encrypted_auth_token",
            "token_env_var",
            "tools_allowed",
            "tools_denied",
            "timeout_seconds",
            "max_concurrency",
            "is_enabled",
        ],
    ),
]

PG_FUNCTION = """
CREATE TABLE IF NOT EXISTS toolhub_registry_generation (
  id integer PRIMARY KEY,
  value bigint NOT NULL
);
INSERT INTO toolhub_registry_generation (id, value) VALUES (1, 0) ON CONFLICT (id) DO NOTHING;
CREATE OR REPLACE FUNCTION toolhub_registry_changed() RETURNS trigger AS $$
BEGIN
  UPDATE toolhub_registry_generation
     SET value = floor(random() * 9007199254740991)::bigint
   WHERE id = 1;
  RETURN NULL;
END;
$$ LANGUAGE plpgsql;
"""


def _pg_sql() -> str:
    parts = [PG_FUNCTION]
    for table in WATCHED:
        parts.append(
            f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {table};\n"
            f"CREATE TRIGGER toolhub_registry_changed AFTER INSERT OR UPDATE OR DELETE "
            f"OR TRUNCATE ON {table} FOR EACH STATEMENT EXECUTE FUNCTION toolhub_registry_changed();"
        )
    for table, on_insert, columns in PARTIAL:
        events = ("INSERT OR " if on_insert else "") + "DELETE OR TRUNCATE"
        parts.append(
            f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {table};\n"
            f"CREATE TRIGGER toolhub_registry_changed AFTER {events} "
            f"OR UPDATE OF {', '.join(columns)} ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION toolhub_registry_changed();"
        )
    return "\n".join(parts)


def _sqlite_statements() -> list[str]:
    bump = "UPDATE toolhub_registry_generation SET value = random() WHERE id = 1;"
    statements = [
        "CREATE TABLE IF NOT EXISTS toolhub_registry_generation "
        "(id integer PRIMARY KEY, value bigint NOT NULL)",
        "INSERT OR IGNORE INTO toolhub_registry_generation (id, value) VALUES (1, 0)",
    ]
    events = [(table, ["INSERT", "UPDATE", "DELETE"]) for table in WATCHED]
    events += [
        (table, [*(["INSERT"] if on_insert else []), "DELETE", f"UPDATE OF {', '.join(columns)}"])
        for table, on_insert, columns in PARTIAL
    ]
    for table, kinds in events:
        for n, kind in enumerate(kinds):
            name = f"toolhub_registry_changed_{table}_{n}"
            statements.append(f"DROP TRIGGER IF EXISTS {name}")
            statements.append(f"CREATE TRIGGER {name} AFTER {kind} ON {table} BEGIN {bump} END")
    return statements


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(_pg_sql())
    elif vendor == "sqlite":
        for statement in _sqlite_statements():
            schema_editor.execute(statement)


def remove(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        for table in WATCHED + [t for t, _, _ in PARTIAL]:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {table}")
        schema_editor.execute("DROP FUNCTION IF EXISTS toolhub_registry_changed()")
    elif vendor == "sqlite":
        for statement in _sqlite_statements():
            if statement.startswith("DROP TRIGGER"):
                schema_editor.execute(statement)
    schema_editor.execute("DROP TABLE IF EXISTS toolhub_registry_generation")


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0006_audit_triggers"),
        ("auth", "0012_alter_user_first_name_max_length"),
    ]
    operations = [migrations.RunPython(install, remove)]
