"""docker-compose.yml describes the production shape; every command it names must exist here."""

from __future__ import annotations

import ast
import importlib
import json
import re
import shlex
from pathlib import Path

import yaml
from django.core.management import get_commands

from toolhub.env import SETTINGS_NAMES, env_bool

ROOT = Path(__file__).resolve().parent.parent


def load_compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_production_services():
    services = load_compose()["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)


def command_lines(command) -> list[list[str]]:
    """The argv of each command a service runs: ``sh -c "a && b"`` is a, then b."""
    argv = command if isinstance(command, list) else shlex.split(command)
    if argv[:2] == ["sh", "-c"]:
        assert len(argv) == 3, argv
        assert ";" not in argv[2] and "||" not in argv[2], "chain steps with && only"
        return [shlex.split(step) for step in argv[2].split("&&")]
    return [argv]


def test_every_command_exists_in_the_project():
    services = load_compose()["services"]
    checked = 0
    for name, service in services.items():
        command = service.get("command")
        if not command or service.get("image", "").startswith(("postgres", "redis")):
            continue
        for argv in command_lines(command):
            check_command(name, argv)
            checked += 1
    assert checked >= 6


def check_command(name: str, argv: list[str]) -> None:
    commands = get_commands()
    if argv[:2] == ["python", "manage.py"]:
        assert argv[2] in commands, f"{name}: unknown management command {argv[2]}"
    elif argv[0] == "gunicorn":
        module, attr = argv[1].split(":")
        assert hasattr(importlib.import_module(module), attr), f"{name}: {argv[1]}"
    elif argv[0] == "celery":
        app_module = argv[argv.index("-A") + 1]
        app = importlib.import_module(app_module).celery_app
        assert argv[argv.index("-A") + 2] in ("worker", "beat")
        if "--queues" in argv:
            queues = argv[argv.index("--queues") + 1].split(",")
            assert queues, name
        assert app.main == "toolhub"
    else:
        raise AssertionError(f"{name}: command {argv!r} is not checked by this test")


def test_compose_keeps_no_secret():
    text = (ROOT / "docker-compose.yml").read_text()
    env = load_compose()["x-toolhub"]["environment"]
    for key in ("SECRET_KEY", "TOOLHUB_ENCRYPTION_KEYS"):
        assert env[key].startswith("${"), key
    # Passwords appear only as variables to fill in (${NAME…} or $$NAME), never as values.
    code = "\n".join(line.split("#", 1)[0] for line in text.splitlines())
    code = re.sub(r"\$\{[A-Z_]*PASSWORD[^}]*\}|\$*\b[A-Z_]*PASSWORD\b", "", code)
    assert "password" not in code.lower().replace("requirepass", "")


def test_healthcheck_asks_a_host_the_default_allowed_hosts_accept():
    compose = load_compose()
    default = compose["x-toolhub"]["environment"]["ALLOWED_HOSTS"].split(":-", 1)[1].rstrip("}")
    probe = " ".join(compose["services"]["web"]["healthcheck"]["test"])
    host = probe.split("http://", 1)[1].split(":", 1)[0]
    assert host in default.split(","), (host, default)


def test_processes_share_var_and_may_write_it():
    # Workers write full outputs (artifacts) that the web process serves; beat keeps
    # its schedule there. The image runs as nobody.
    compose = load_compose()
    assert "toolhub-var:/app/var" in compose["x-toolhub"]["volumes"]
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert "chown nobody /app/var" in dockerfile and "USER nobody" in dockerfile
    # Static files are collected with DEBUG off, so the manifest production reads exists.
    collect = next(block for block in dockerfile.split("\nRUN ") if "collectstatic" in block)
    assert "DEBUG=false" in collect and "DEBUG=true" not in collect


def test_migrate_also_makes_the_standard_roles_and_python_tools():
    steps = command_lines(load_compose()["services"]["migrate"]["command"])
    names = [argv[2] for argv in steps if argv[:2] == ["python", "manage.py"]]
    assert names[:1] == ["migrate"], names  # the rest need the schema
    assert {"ensure_roles", "sync_python_tools"} <= set(names[1:]), names
    # At every start: only missing roles are created, rights taken away stay away.
    ensure = next(argv for argv in steps if argv[2:3] == ["ensure_roles"])
    assert "--missing-only" in ensure, ensure
    # ensure_admin takes no credentials from the environment and prints a random
    # one: never run unattended, where it would land in the container logs.
    assert "ensure_admin" not in names


def test_processes_start_after_migrate_has_finished():
    services = load_compose()["services"]
    for name in ("web", "worker", "beat"):
        depends = services[name]["depends_on"]
        assert depends["migrate"] == {"condition": "service_completed_successfully"}, name
        assert depends["postgres"] == {"condition": "service_healthy"}, name
        assert "redis" in depends, name
    assert services["migrate"]["restart"] == "no"


def test_plain_http_works_out_of_the_box_and_tls_is_one_setting_away(monkeypatch):
    """Compose serves plain HTTP on :8000: with DEBUG off the settings would redirect
    every page to https and send cookies only over it, unless compose turns that off;
    the operator turns it back on (behind a TLS proxy) from the environment."""
    env = load_compose()["x-toolhub"]["environment"]
    assert env["DEBUG"] == "false"
    for key in ("SECURE_SSL_REDIRECT", "SESSION_COOKIE_SECURE", "CSRF_COOKIE_SECURE"):
        assert env[key] == f"${{{key}:-false}}", key
        # What the settings make of compose's default: off.
        monkeypatch.setenv(key, env[key].split(":-", 1)[1].rstrip("}"))
        assert env_bool(key, default=True) is False, key
    text = (ROOT / "docker-compose.yml").read_text()
    assert "TLS-terminating" in text  # the comment says when to set them to true


# ----------------------------------------------------------------------- settings reach


def env_example_names() -> set[str]:
    """Every variable .env.example names, set or commented out with its default."""
    names = set()
    for line in (ROOT / ".env.example").read_text().splitlines():
        match = re.match(r"^(?:# )?([A-Z][A-Z0-9_]*)=", line)
        if match:
            names.add(match.group(1))
    return names


# Read by the settings, deliberately absent from .env.example, each with the reason.
NOT_FOR_DEPLOYMENTS = {
    # ./scripts/demo only; the settings refuse it with DEBUG off.
    "TOOLHUB_DEMO_SANDBOX": "the demo's fake upstream APIs",
}


ENV_READERS = {
    "env_str",
    "env_bool",
    "env_int",
    "env_float",
    "env_list",
    "env_map",
    "env_egress_allow",
}


def _called_name(call: ast.Call) -> str:
    func = call.func
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        owner = ast.unparse(func.value)
        if func.attr == "get" and owner == "os.environ":
            return "os.environ.get"
        return f"{owner}.{func.attr}" if owner == "os" else func.attr
    return ""


def names_read_in_source(path: Path) -> set[str]:
    """Variables a module reads by literal name: the typed helpers, os.environ.get,
    os.getenv and os.environ[...] (a write such as setdefault is not a read)."""
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        literal = None
        if isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant):
            if _called_name(node) in ENV_READERS | {"os.environ.get", "os.getenv"}:
                literal = node.args[0].value
        elif isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load):
            if ast.unparse(node.value) == "os.environ" and isinstance(node.slice, ast.Constant):
                literal = node.slice.value
        if isinstance(literal, str):
            names.add(literal)
    return names


def opentelemetry_standard(name: str) -> bool:
    """OpenTelemetry's own variables (OTEL_*): the SDK reads them and documents them;
    docs/operations.md ("Traces") lists those an operator sets and links the spec."""
    return name.startswith("OTEL_")


def settings_read() -> set[str]:
    """Every variable ToolHub's code reads: what the settings registered while loading
    (SETTINGS_NAMES) and every literal read in the source of the three packages, except
    OpenTelemetry's own."""
    read = {name for name in SETTINGS_NAMES if not name.endswith("_FILE")}
    for package in ("toolhub", "registry", "executions"):
        for path in (ROOT / package).rglob("*.py"):
            if path.name != "settings_test.py":
                read |= names_read_in_source(path)
    return {name for name in read if not opentelemetry_standard(name)}


def test_the_source_scan_finds_the_reads_it_is_meant_to_find():
    found = names_read_in_source(ROOT / "toolhub" / "celery.py")
    assert "TOOLHUB_WORKER_DB_REUSE_MAX" in found
    assert "DJANGO_SETTINGS_MODULE" not in found  # setdefault writes it
    assert {"TOOLHUB_INLINE_WAIT", "TOOLHUB_EGRESS_ALLOW", "DATABASE_URL"} <= settings_read()
    assert "PROMETHEUS_MULTIPROC_DIR" in settings_read()  # toolhub/metrics.py reads it directly


def test_every_setting_the_code_reads_is_in_env_example_or_set_by_compose():
    read = settings_read()
    assert len(read) > 30, read
    documented = env_example_names() | set(load_compose()["x-toolhub"]["environment"])
    documented |= set(NOT_FOR_DEPLOYMENTS)
    assert sorted(read - documented) == []


def compose_interpolated() -> set[str]:
    """Variables a compose file substitutes (${NAME}, ${NAME:-…}, ${NAME:?…})."""
    names = set()
    for path in ROOT.glob("docker-compose*.yml"):
        names |= set(re.findall(r"\$\{([A-Z][A-Z0-9_]*)", path.read_text()))
    return names


def test_every_variable_env_example_names_is_read_by_toolhub_or_by_compose():
    # A documented setting nothing reads would be a promise the containers break.
    named = {name for name in env_example_names() if not opentelemetry_standard(name)}
    stale = named - settings_read() - compose_interpolated()
    assert sorted(stale) == []


def test_every_setting_reaches_the_web_and_worker_containers():
    """Through env_file (.env, every variable) or compose's environment, in the base
    file and with each overlay (an overlay may add settings, never drop them)."""
    base = load_compose()
    expected_env = set(base["x-toolhub"]["environment"])
    for overlay in ("docker-compose.tls.yml", "docker-compose.segmented.yml"):
        for name, service in load_overlay(overlay)["services"].items():
            assert "env_file" not in service, (overlay, name)
            assert isinstance(service.get("environment", {}), dict), (overlay, name)
    for name in ("web", "worker", "beat", "migrate"):
        service = base["services"][name]
        assert service["env_file"] == [{"path": ".env", "required": False}], name
        assert set(service["environment"]) == expected_env, name
    # What compose builds from .env for ToolHub reaches it through environment.
    interpolated_for_toolhub = set(
        re.findall(r"\$\{([A-Z][A-Z0-9_]*)", yaml.safe_dump(base["x-toolhub"]["environment"]))
    )
    assert {"POSTGRES_PASSWORD", "REDIS_PASSWORD", "SECRET_KEY"} <= interpolated_for_toolhub


def test_every_setting_is_documented_in_the_operations_reference():
    reference = (ROOT / "docs" / "operations.md").read_text()
    assert sorted(n for n in settings_read() if f"`{n}`" not in reference) == []


def test_env_file_reaches_every_toolhub_process():
    compose = load_compose()
    assert compose["x-toolhub"]["env_file"] == [{"path": ".env", "required": False}]
    for name in ("migrate", "web", "worker", "beat"):
        assert compose["services"][name]["env_file"] == compose["x-toolhub"]["env_file"], name


def test_env_example_sets_only_what_has_no_default():
    # An empty value is not the default (a list setting becomes empty): optional
    # settings are commented out, only the required ones are lines to fill in.
    set_lines = [
        line.split("=", 1)[0]
        for line in (ROOT / ".env.example").read_text().splitlines()
        if re.match(r"^[A-Z][A-Z0-9_]*=", line)
    ]
    assert set(set_lines) == {
        "POSTGRES_PASSWORD",
        "REDIS_PASSWORD",
        "SECRET_KEY",
        "TOOLHUB_ENCRYPTION_KEYS",
        "TOOLHUB_AUDIT_SIGNING_KEY",
        "TOOLHUB_OIDC_RSA_PRIVATE_KEY",
        "ALLOWED_HOSTS",
    }
    text = (ROOT / ".env.example").read_text()
    for generator in ("Fernet.generate_key()", "secrets.token_urlsafe"):
        assert generator in text, generator


def test_long_running_services_restart_and_report_health():
    services = load_compose()["services"]
    for name in ("postgres", "redis", "web", "worker", "beat"):
        assert services[name]["restart"] == "unless-stopped", name
    for name in ("postgres", "redis", "web", "worker"):
        assert services[name]["healthcheck"]["test"], name
    assert services["migrate"]["restart"] == "no"


def test_redis_requires_a_password_and_toolhub_sends_it():
    compose = load_compose()
    redis = compose["services"]["redis"]
    assert "--requirepass" in " ".join(redis["command"])
    env = compose["x-toolhub"]["environment"]
    for key in ("REDIS_URL", "CELERY_BROKER_URL"):
        assert env[key].startswith("redis://:${REDIS_PASSWORD:?"), key


def test_gunicorn_workers_share_their_metrics():
    compose = load_compose()
    assert compose["x-toolhub"]["environment"]["PROMETHEUS_MULTIPROC_DIR"] == "/run/prometheus"
    assert any(t.startswith("/run/prometheus") for t in compose["x-toolhub"]["tmpfs"])
    command = compose["services"]["web"]["command"]
    assert command[command.index("--config") + 1] == "python:toolhub.gunicorn_conf"
    from toolhub import gunicorn_conf

    assert callable(gunicorn_conf.child_exit)


def test_the_web_process_serves_the_asgi_application_with_uvicorn_workers():
    # toolhub.asgi serves Django and the MCP endpoint; gunicorn manages uvicorn workers.
    command = load_compose()["services"]["web"]["command"]
    assert command[:2] == ["gunicorn", "toolhub.asgi:application"], command
    assert "--worker-class" not in command and "-k" not in command  # the config file sets it
    assert "--threads" not in command  # a gthread option: uvicorn workers ignore it
    from toolhub import gunicorn_conf

    module, _, name = gunicorn_conf.worker_class.rpartition(".")
    assert module == "uvicorn_worker", gunicorn_conf.worker_class
    assert hasattr(importlib.import_module(module), name)
    # The image runs the same command as compose.
    cmd = next(
        line for line in (ROOT / "Dockerfile").read_text().splitlines() if line.startswith("CMD ")
    )
    assert json.loads(cmd.removeprefix("CMD ")) == command


def test_the_tls_overlay_puts_a_proxy_in_front_and_turns_tls_settings_on():
    overlay = load_overlay("docker-compose.tls.yml")
    proxy = overlay["services"]["proxy"]
    assert proxy["image"].startswith("caddy")
    assert "reverse_proxy web:8000" in " ".join(proxy["command"])
    for name in ("web", "worker", "beat", "migrate"):
        env = overlay["services"][name]["environment"]
        assert env["SECURE_SSL_REDIRECT"] == env["CSRF_COOKIE_SECURE"] == "true", name


# ----------------------------------------------------------------------- where calls leave from


def load_overlay(name: str) -> dict:
    class Loader(yaml.SafeLoader):
        pass

    Loader.add_constructor("!reset", lambda loader, node: None)
    return yaml.load((ROOT / name).read_text(), Loader=Loader)  # noqa: S506


def test_the_default_deployment_runs_waiting_http_calls_in_the_web_process():
    # No TOOLHUB_INLINE_WAIT in compose: the settings' default, documented as needing egress on web.
    compose = load_compose()
    assert "TOOLHUB_INLINE_WAIT" not in compose["x-toolhub"]["environment"]
    assert "# TOOLHUB_INLINE_WAIT=http" in (ROOT / ".env.example").read_text()


def test_the_segmented_overlay_keeps_every_outbound_call_on_the_workers():
    base, tls = load_compose(), load_overlay("docker-compose.tls.yml")
    segmented = load_overlay("docker-compose.segmented.yml")
    # The default network has no route out; `egress` has one.
    assert segmented["networks"]["default"] == {"internal": True}
    assert not (segmented["networks"]["egress"] or {}).get("internal")
    # Only the workers and the proxy (the way in) join `egress`; every other service,
    # web included, stays on the internal default network alone.
    joined = {
        name for name, s in segmented["services"].items() if "egress" in s.get("networks", [])
    }
    assert joined == {"worker", "proxy"}
    assert all("networks" not in service for service in base["services"].values())
    assert all("networks" not in service for service in tls["services"].values())
    # Web runs no executor: a waiting call goes through the broker to a worker.
    from toolhub.settings.execution import inline_wait_kinds

    inline = segmented["services"]["web"]["environment"]["TOOLHUB_INLINE_WAIT"]
    assert inline_wait_kinds([inline]) == frozenset()
    # It is used with the TLS overlay: the proxy exists there and web publishes no port.
    assert set(segmented["services"]) <= set(base["services"]) | set(tls["services"])
    assert tls["services"]["web"]["ports"] is None  # !reset
    assert "docker-compose.tls.yml" in (ROOT / "docker-compose.segmented.yml").read_text()
