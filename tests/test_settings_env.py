"""Settings come from the environment and fail loudly on bad values."""

from __future__ import annotations

import ipaddress
import os
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.exceptions import ImproperlyConfigured

from toolhub import env

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True)
def _settings_names_kept_apart(monkeypatch):
    """The helpers record every name they read (``env.SETTINGS_NAMES``, which the compose test
    checks against the deployment docs); the made-up names read here go to a copy."""
    monkeypatch.setattr(env, "SETTINGS_NAMES", set(env.SETTINGS_NAMES))


SHOW_SETTINGS = (
    "import django; django.setup(); from django.conf import settings; "
    "print(settings.DEBUG, settings.DATABASES['default']['ENGINE'], settings.CELERY_TASK_ALWAYS_EAGER)"
)


def run_settings(tmp_path, SCRIPT=SHOW_SETTINGS, **environ) -> subprocess.CompletedProcess:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k
        not in {
            "DATABASE_URL",
            "SECRET_KEY",
            "TOOLHUB_ENCRYPTION_KEYS",
            "TOOLHUB_AUDIT_SIGNING_KEY",
            "TOOLHUB_OIDC_RSA_PRIVATE_KEY",
            "TOOLHUB_OIDC_RSA_PRIVATE_KEY_FILE",
            "DEBUG",
            "REDIS_URL",
        }
    }
    clean.update(
        TOOLHUB_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="toolhub.settings", **environ
    )
    return subprocess.run(
        [sys.executable, "-c", SCRIPT],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_embedded_default_runs_with_nothing_set(tmp_path):
    result = run_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "django.db.backends.sqlite3", "True"]
    # A development secret is generated into var/, never into the repository.
    assert (tmp_path / "dev-secret-key").exists() and (tmp_path / "dev-encryption-key").exists()
    assert (tmp_path / "dev-oidc-rsa-key.pem").read_text().startswith("-----BEGIN PRIVATE KEY")


def test_debug_off_without_secret_key_is_a_startup_error(tmp_path):
    result = run_settings(tmp_path, DEBUG="false")
    assert result.returncode != 0
    assert "SECRET_KEY must be set" in result.stderr


def test_debug_off_without_encryption_key_is_a_startup_error(tmp_path):
    result = run_settings(tmp_path, DEBUG="false", SECRET_KEY="x" * 50)
    assert result.returncode != 0
    assert "TOOLHUB_ENCRYPTION_KEYS must be set" in result.stderr


def test_debug_off_without_audit_signing_key_is_a_startup_error(tmp_path):
    result = run_settings(
        tmp_path,
        DEBUG="false",
        SECRET_KEY="x" * 50,
        TOOLHUB_ENCRYPTION_KEYS="dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=",
    )
    assert result.returncode != 0
    assert "TOOLHUB_AUDIT_SIGNING_KEY must be set" in result.stderr


def test_bad_encryption_key_is_refused(tmp_path):
    result = run_settings(tmp_path, TOOLHUB_ENCRYPTION_KEYS="not-a-key")
    assert result.returncode != 0
    assert "not a Fernet key" in result.stderr


def test_bad_encryption_key_is_named_by_position_never_by_value(tmp_path):
    good = "dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24="
    result = run_settings(tmp_path, TOOLHUB_ENCRYPTION_KEYS=f"{good},typo-of-the-old-key-xyz")
    assert result.returncode != 0
    assert "entry 2 of 2 is not a Fernet key" in result.stderr
    assert "typo-of-the-old-key-xyz" not in result.stderr


# The test run's own key (toolhub/settings_test.py makes one per process).
OIDC_KEY = os.environ["TOOLHUB_OIDC_RSA_PRIVATE_KEY"]


def test_debug_off_without_the_id_token_signing_key_is_a_startup_error(tmp_path):
    result = run_settings(
        tmp_path,
        DEBUG="false",
        SECRET_KEY="x" * 50,
        TOOLHUB_ENCRYPTION_KEYS="dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=",
        TOOLHUB_AUDIT_SIGNING_KEY="z" * 32,
    )
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr
    assert "TOOLHUB_OIDC_RSA_PRIVATE_KEY (or TOOLHUB_OIDC_RSA_PRIVATE_KEY_FILE) must be set" in (
        result.stderr
    )
    assert not (tmp_path / "dev-oidc-rsa-key.pem").exists()  # none made up in production


SHOW_OIDC_KEYS = (
    "import django; django.setup(); from oauth2_provider.settings import oauth2_settings as o; "
    "print(o.OIDC_ENABLED, o.OIDC_RSA_PRIVATE_KEY.count('BEGIN'), "
    "len(o.OIDC_RSA_PRIVATE_KEYS_INACTIVE))"
)


def test_the_key_is_read_from_a_file_or_a_one_line_value_with_previous_keys(tmp_path):
    key_file = tmp_path / "oidc.pem"
    key_file.write_text(OIDC_KEY)
    result = run_settings(
        tmp_path,
        SHOW_OIDC_KEYS,
        TOOLHUB_OIDC_RSA_PRIVATE_KEY_FILE=str(key_file),
        TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE=(OIDC_KEY + OIDC_KEY).replace("\n", "\\n"),
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["True", "1", "2"]


@pytest.mark.parametrize(
    ("value", "said"),
    [
        ("not a key", "no PEM private key found"),
        ("-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----", "key 1 of 1 is not"),
    ],
)
def test_a_key_that_is_no_rsa_key_is_refused_without_quoting_it(tmp_path, value, said):
    result = run_settings(tmp_path, TOOLHUB_OIDC_RSA_PRIVATE_KEY=value)
    assert result.returncode != 0
    assert f"TOOLHUB_OIDC_RSA_PRIVATE_KEY: {said}" in result.stderr
    assert "AAAA" not in result.stderr and "not a key" not in result.stderr


def test_database_url_switches_to_production_shape(tmp_path):
    result = run_settings(
        tmp_path,
        DATABASE_URL="postgres://u@127.0.0.1:5432/x",
        SECRET_KEY="y" * 50,
        TOOLHUB_ENCRYPTION_KEYS="dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=",
        TOOLHUB_AUDIT_SIGNING_KEY="z" * 32,
        TOOLHUB_OIDC_RSA_PRIVATE_KEY=OIDC_KEY,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split()[:2] == ["False", "toolhub.db.postgresql"]


@pytest.mark.parametrize(
    ("helper", "raw"),
    [
        (lambda: env.env_bool("TH_X", False), "perhaps"),
        (lambda: env.env_int("TH_X", 1), "ten"),
        *((lambda: env.env_float("TH_X", 3.0, minimum=0.1), raw) for raw in ("ten", "nan", "0")),
    ],
)
def test_typed_helpers_fail_loudly(monkeypatch, helper, raw):
    monkeypatch.setenv("TH_X", raw)
    with pytest.raises(ImproperlyConfigured, match="TH_X"):
        helper()


def test_redis_timeouts_bound_the_cache_and_the_broker(tmp_path):
    script = (
        "import django; django.setup(); from django.conf import settings as s; "
        "print(s.CACHES['default']['OPTIONS'], s.CELERY_BROKER_TRANSPORT_OPTIONS['socket_timeout'], "
        "s.CELERY_BROKER_TRANSPORT_OPTIONS['socket_connect_timeout'])"
    )
    result = run_settings(
        tmp_path,
        script,
        REDIS_URL="redis://127.0.0.1:6379/0",
        TOOLHUB_REDIS_TIMEOUT="1.5",
        TOOLHUB_REDIS_CONNECT_TIMEOUT="0.5",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[-2] == (
        "{'socket_connect_timeout': 0.5, 'socket_timeout': 1.5} 1.5 0.5"
    )


def test_file_variant_is_read(monkeypatch, tmp_path):
    secret = tmp_path / "s"
    secret.write_text("from-file\n")
    monkeypatch.setenv("TH_Y_FILE", str(secret))
    assert env.env_str("TH_Y") == "from-file"
    assert env.env_list("TH_Z", ["a"]) == ["a"]
    monkeypatch.setenv("TH_Z", "a, b,,c")
    assert env.env_list("TH_Z") == ["a", "b", "c"]


CONCURRENT_WRITES = """
import threading, time, django
django.setup()
from django.db import connection, connections, transaction

with connection.cursor() as cursor:
    cursor.execute("CREATE TABLE probe (x integer)")
connections.close_all()
errors = []

def write():
    try:
        with transaction.atomic(), connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM probe")  # read, then write: a lock upgrade
            time.sleep(0.05)
            cursor.execute("INSERT INTO probe VALUES (1)")
    except Exception as exc:
        errors.append(repr(exc))
    finally:
        connections.close_all()

threads = [threading.Thread(target=write) for _ in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
with connection.cursor() as cursor:
    cursor.execute("SELECT count(*) FROM probe")
    print(cursor.fetchone()[0], errors)
"""


def test_embedded_sqlite_takes_concurrent_writes_without_lock_errors(tmp_path):
    # The demo serves threads: a transaction that reads, then writes, must wait for
    # the write lock, not fail with "database is locked" (a 500).
    result = run_settings(tmp_path, SCRIPT=CONCURRENT_WRITES)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "8 []"


PRODUCTION = {
    "SECRET_KEY": "y" * 50,
    "TOOLHUB_ENCRYPTION_KEYS": "dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=",
    "TOOLHUB_AUDIT_SIGNING_KEY": "z" * 32,
    "TOOLHUB_OIDC_RSA_PRIVATE_KEY": OIDC_KEY,
}
ACCEPTED_ENTRIES = "IP addresses or CIDR networks"


@pytest.mark.parametrize("entry", ["10.0.0.0/33", "10.0.0.300", "1.2.3.4.5", "fd12::zz", "a/b"])
def test_egress_allow_entry_that_is_no_network_is_a_startup_error(tmp_path, entry):
    # Not silently taken for a host name (which could never match).
    result = run_settings(tmp_path, TOOLHUB_EGRESS_ALLOW=f"api.internal.example,{entry}")
    assert result.returncode != 0
    assert "TOOLHUB_EGRESS_ALLOW" in result.stderr and repr(entry) in result.stderr
    assert "not a valid IPv4/IPv6 address or network" in result.stderr
    assert ACCEPTED_ENTRIES in result.stderr


@pytest.mark.parametrize(
    "entry", ["http://x", "host:80", "two words", "bad!name", "-", "bücher.example"]
)
def test_egress_allow_entry_that_is_no_host_name_is_a_startup_error(tmp_path, entry):
    result = run_settings(tmp_path, TOOLHUB_EGRESS_ALLOW=entry)
    assert result.returncode != 0
    assert "TOOLHUB_EGRESS_ALLOW" in result.stderr and repr(entry) in result.stderr
    assert ACCEPTED_ENTRIES in result.stderr and "host names" in result.stderr


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("10.20.0.0/16", ipaddress.ip_network("10.20.0.0/16")),
        ("10.20.0.1/16", ipaddress.ip_network("10.20.0.0/16")),
        ("[fd12::1]", ipaddress.ip_network("fd12::1/128")),
        ("127.0.0.1", ipaddress.ip_network("127.0.0.1/32")),
        ("fd00::/8", ipaddress.ip_network("fd00::/8")),
        (" Api.Internal.Example. ", "api.internal.example"),
        ("db-1", "db-1"),
        ("mock_api", "mock_api"),
    ],
)
def test_egress_allow_entry_parses(entry, expected):
    assert env.egress_allow_entry(entry) == expected


@pytest.mark.parametrize(
    "value", ["bad", "reporting", "=sqlite:///x.db", "reporting=", "a b=sqlite:///x.db"]
)
def test_malformed_database_aliases_are_a_startup_error(tmp_path, value):
    result = run_settings(tmp_path, TOOLHUB_DATABASE_ALIASES=f"ok=sqlite:///ok.db,{value}")
    assert result.returncode != 0
    assert "TOOLHUB_DATABASE_ALIASES: entry 2 of 2 is not name=value" in result.stderr
    assert 'expected TOOLHUB_DATABASE_ALIASES="name=value,name2=value2"' in result.stderr


def test_database_alias_errors_never_quote_the_connection_string(tmp_path):
    secret = "postgres://u:hunter2-canary@db/x"
    for value in (secret, f"reporting={secret.replace('postgres', 'mysql')}"):
        result = run_settings(tmp_path, TOOLHUB_DATABASE_ALIASES=value)
        assert result.returncode != 0
        assert "TOOLHUB_DATABASE_ALIASES" in result.stderr
        assert "hunter2-canary" not in result.stderr
    assert "the connection of 'reporting' is not a postgresql://" in result.stderr


def test_database_alias_given_twice_is_a_startup_error(tmp_path):
    result = run_settings(tmp_path, TOOLHUB_DATABASE_ALIASES="r=sqlite:///a.db,r=sqlite:///b.db")
    assert result.returncode != 0
    assert "TOOLHUB_DATABASE_ALIASES: the name 'r' is given twice" in result.stderr


SHOW_ALIASES = (
    "import django; django.setup(); from django.conf import settings; "
    "print(sorted(settings.TOOLHUB_DATABASE_ALIASES.items()))"
)


def test_database_aliases_are_parsed(tmp_path):
    result = run_settings(
        tmp_path,
        SCRIPT=SHOW_ALIASES,
        TOOLHUB_DATABASE_ALIASES=" reporting = postgres://u:p@db:5432/r?x=1 ,files=sqlite:///f.db",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == repr(
        [("files", "sqlite:///f.db"), ("reporting", "postgres://u:p@db:5432/r?x=1")]
    )


@pytest.mark.parametrize(
    ("url", "scheme"),
    [
        ("mysql://u:hunter2-canary@db/x", "has the unsupported scheme 'mysql'"),
        ("postgis://u:hunter2-canary@db/x", "has the unsupported scheme 'postgis'"),
        ("u:hunter2-canary@db/x", "has no valid scheme"),
        ("u:hunter2-canary@db/x://", "has no valid scheme"),
    ],
)
def test_unsupported_database_url_scheme_is_a_startup_error(tmp_path, url, scheme):
    result = run_settings(tmp_path, DATABASE_URL=url, **PRODUCTION)
    assert result.returncode != 0
    assert f"DATABASE_URL {scheme}; accepted schemes: postgres://, postgresql://" in result.stderr
    assert "sqlite://" in result.stderr
    assert "hunter2-canary" not in result.stderr


@pytest.mark.parametrize(
    "environ, named",
    [
        ({"TOOLHUB_ENCRYPTION_KEYS": "not-a-key"}, "TOOLHUB_ENCRYPTION_KEYS"),
        ({"TOOLHUB_REDIS_TIMEOUT": "soon"}, "TOOLHUB_REDIS_TIMEOUT"),
        ({"DEBUG": "false"}, "SECRET_KEY"),
    ],
)
def test_manage_py_names_a_bad_setting_in_one_line_without_a_traceback(tmp_path, environ, named):
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in {"DATABASE_URL", "SECRET_KEY", "TOOLHUB_ENCRYPTION_KEYS", "DEBUG"}
    }
    clean.update(TOOLHUB_VAR_DIR=str(tmp_path), DJANGO_SETTINGS_MODULE="toolhub.settings")
    clean.update(environ)
    result = subprocess.run(
        [sys.executable, "manage.py", "check"],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("ToolHub is not configured: "), lines
    assert named in lines[0]


@pytest.mark.parametrize(
    "keys, position", [("abc", "key 1 of 1"), (f"{'k' * 40},short", "key 2 of 2")]
)
def test_a_short_audit_signing_key_is_refused_in_production(tmp_path, keys, position):
    result = run_settings(
        tmp_path,
        DEBUG="false",
        SECRET_KEY="s" * 50,
        TOOLHUB_ENCRYPTION_KEYS="dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=",
        TOOLHUB_AUDIT_SIGNING_KEY=keys,
        ALLOWED_HOSTS="toolhub.example.com",
    )
    assert result.returncode != 0
    assert f"TOOLHUB_AUDIT_SIGNING_KEY: {position} is shorter than 32 characters" in result.stderr
    assert "short" not in result.stderr.split("TOOLHUB_AUDIT_SIGNING_KEY")[1].split(";")[0].replace(
        "shorter", ""
    )


def test_the_demo_sandbox_is_refused_with_debug_off(tmp_path):
    result = run_settings(
        tmp_path,
        DEBUG="false",
        SECRET_KEY="x" * 50,
        TOOLHUB_ENCRYPTION_KEYS="dGVzdC1vbmx5LWtleS1ub3QtZm9yLXByb2R1Y3Rpb24=",
        TOOLHUB_AUDIT_SIGNING_KEY="k" * 48,
        TOOLHUB_OIDC_RSA_PRIVATE_KEY=OIDC_KEY,
        TOOLHUB_DEMO_SANDBOX="true",
    )
    assert result.returncode != 0
    assert "TOOLHUB_DEMO_SANDBOX" in result.stderr and "DEBUG is off" in result.stderr
