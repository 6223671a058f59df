"""The database refuses edits of finished verification runs and of their findings.

What the admin's integrity panel shows (the latest finished run, and the
records it flags) must not be editable by the application's database role:
a run's result set to ``passed`` would clear every flag. Like the audit log,
the runs are written forward only: a run is inserted ``queued``, moves
``queued → running | error`` and ``running → passed | failed | error``, and
then never changes again (deleting the user who asked for it may clear
``requested_by_id``). Findings are inserted while their run is ``running``
(by the run itself, just before it finishes) and never changed.

PostgreSQL: row triggers refuse anything else, DELETE included, and TRUNCATE
is left to the tables' owner (``toolhub_truncate_guard`` of 0013). SQLite
(the embedded mode): the same rules for INSERT and UPDATE; DELETE is left
open there, since ``flush`` empties tables with DELETE and the embedded mode
has no database roles to tell apart.
"""

from django.db import migrations

RUN = "registry_verificationrun"
FINDING = "registry_verificationfinding"

# The moves a run may make (the service's ``VerificationStatus`` docstring).
MOVES = """(
  (OLD.status = 'queued' AND NEW.status IN ('running', 'error'))
  OR (OLD.status = 'running' AND NEW.status IN ('passed', 'failed', 'error'))
)"""

PG_INSTALL = f"""
CREATE OR REPLACE FUNCTION toolhub_verification_run_guard() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'DELETE' THEN
    RAISE EXCEPTION 'verification runs are append-only: DELETE refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF TG_OP = 'INSERT' THEN
    IF NEW.status = 'queued' AND NEW.started_at IS NULL AND NEW.finished_at IS NULL THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'a verification run starts queued: INSERT refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  IF NEW.id = OLD.id
     AND NEW.requested_at = OLD.requested_at
     AND NEW.requested_by_name = OLD.requested_by_name
     AND (NEW.requested_by_id IS NULL OR NEW.requested_by_id IS NOT DISTINCT FROM OLD.requested_by_id)
     AND ({MOVES}
          OR (to_jsonb(NEW) - 'requested_by_id') = (to_jsonb(OLD) - 'requested_by_id')) THEN
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'verification runs are append-only: UPDATE refused'
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

CREATE OR REPLACE FUNCTION toolhub_verification_finding_guard() RETURNS trigger AS $$
BEGIN
  IF TG_OP = 'INSERT' THEN
    IF (SELECT status FROM {RUN} WHERE id = NEW.run_id) = 'running' THEN
      RETURN NEW;
    END IF;
    RAISE EXCEPTION 'findings are written by their running verification only: INSERT refused'
      USING ERRCODE = 'insufficient_privilege';
  END IF;
  RAISE EXCEPTION 'verification findings are append-only: % refused', TG_OP
    USING ERRCODE = 'insufficient_privilege';
END;
$$ LANGUAGE plpgsql;

DROP TRIGGER IF EXISTS toolhub_verification_guard ON {RUN};
CREATE TRIGGER toolhub_verification_guard
  BEFORE INSERT OR UPDATE OR DELETE ON {RUN}
  FOR EACH ROW EXECUTE FUNCTION toolhub_verification_run_guard();
DROP TRIGGER IF EXISTS toolhub_verification_guard ON {FINDING};
CREATE TRIGGER toolhub_verification_guard
  BEFORE INSERT OR UPDATE OR DELETE ON {FINDING}
  FOR EACH ROW EXECUTE FUNCTION toolhub_verification_finding_guard();
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON {RUN};
CREATE TRIGGER toolhub_truncate_guard BEFORE TRUNCATE ON {RUN}
  FOR EACH STATEMENT EXECUTE FUNCTION toolhub_truncate_guard();
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON {FINDING};
CREATE TRIGGER toolhub_truncate_guard BEFORE TRUNCATE ON {FINDING}
  FOR EACH STATEMENT EXECUTE FUNCTION toolhub_truncate_guard();
"""  # noqa: S608 (constants only)

PG_REMOVE = f"""
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON {FINDING};
DROP TRIGGER IF EXISTS toolhub_truncate_guard ON {RUN};
DROP TRIGGER IF EXISTS toolhub_verification_guard ON {FINDING};
DROP TRIGGER IF EXISTS toolhub_verification_guard ON {RUN};
DROP FUNCTION IF EXISTS toolhub_verification_finding_guard();
DROP FUNCTION IF EXISTS toolhub_verification_run_guard();
"""

# SQLite: unchanged columns compared one by one (it has no row-to-JSON).
_KEPT = " AND ".join(
    f"NEW.{column} IS OLD.{column}"
    for column in (
        "status",
        "started_at",
        "finished_at",
        "checked",
        "head_sequence",
        "head_hash",
        "problem_kind",
        "problem_message",
        "warnings",
        "findings_truncated",
    )
)
SQLITE_TRIGGERS = {
    "toolhub_verification_run_insert": f"""
CREATE TRIGGER toolhub_verification_run_insert BEFORE INSERT ON {RUN}
WHEN NEW.status IS NOT 'queued' OR NEW.started_at IS NOT NULL OR NEW.finished_at IS NOT NULL
BEGIN SELECT RAISE(ABORT, 'a verification run starts queued: INSERT refused'); END
""",
    "toolhub_verification_run_update": f"""
CREATE TRIGGER toolhub_verification_run_update BEFORE UPDATE ON {RUN}
WHEN NOT (
  NEW.id IS OLD.id
  AND NEW.requested_at IS OLD.requested_at
  AND NEW.requested_by_name IS OLD.requested_by_name
  AND (NEW.requested_by_id IS NULL OR NEW.requested_by_id IS OLD.requested_by_id)
  AND ({MOVES} OR ({_KEPT}))
)
BEGIN SELECT RAISE(ABORT, 'verification runs are append-only: UPDATE refused'); END
""",
    "toolhub_verification_finding_insert": f"""
CREATE TRIGGER toolhub_verification_finding_insert BEFORE INSERT ON {FINDING}
WHEN (SELECT status FROM {RUN} WHERE id = NEW.run_id) IS NOT 'running'
BEGIN SELECT RAISE(ABORT, 'findings are written by their running verification only: INSERT refused'); END
""",  # noqa: S608 (constants only)
    "toolhub_verification_finding_update": f"""
CREATE TRIGGER toolhub_verification_finding_update BEFORE UPDATE ON {FINDING}
BEGIN SELECT RAISE(ABORT, 'verification findings are append-only: UPDATE refused'); END
""",
}


def install(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_INSTALL, params=None)
    elif vendor == "sqlite":
        for name, sql in SQLITE_TRIGGERS.items():
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")
            schema_editor.execute(sql)


def remove(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "postgresql":
        schema_editor.execute(PG_REMOVE, params=None)
    elif vendor == "sqlite":
        for name in SQLITE_TRIGGERS:
            schema_editor.execute(f"DROP TRIGGER IF EXISTS {name}")


class Migration(migrations.Migration):
    dependencies = [("registry", "0019_verification_runs")]
    operations = [migrations.RunPython(install, remove)]
