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

Token ``last_used_at`` and user ``last_login`` writes do not bump it (they
change nothing a decision depends on and happen on ordinary requests).
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
    "registry_mcpserver",
    "auth_group",
    "auth_group_permissions",
    "auth_user_groups",
    "auth_user_user_permissions",
]
# Tables where only some columns matter: (table, columns whose UPDATE bumps).
PARTIAL = [
    ("registry_apitoken", ["user_id", "token_hash", "expires_at", "revoked_at"]),
    ("auth_user", ["username", "is_active", "is_superuser", "is_staff"]),
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
    for table, columns in PARTIAL:
        parts.append(
            f"DROP TRIGGER IF EXISTS toolhub_registry_changed ON {table};\n"
            f"CREATE TRIGGER toolhub_registry_changed AFTER INSERT OR DELETE OR TRUNCATE "
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
        (table, ["INSERT", "DELETE", f"UPDATE OF {', '.join(columns)}"])
        for table, columns in PARTIAL
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
        for table in WATCHED + [t for t, _ in PARTIAL]:
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
