"""docker-compose.yml describes the production shape; every command it names must exist here."""

from __future__ import annotations

import importlib
from pathlib import Path

import yaml
from django.core.management import get_commands

ROOT = Path(__file__).resolve().parent.parent


def load_compose() -> dict:
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_has_the_production_services():
    services = load_compose()["services"]
    assert {"postgres", "redis", "web", "worker", "beat"} <= set(services)


def test_every_command_exists_in_the_project():
    services = load_compose()["services"]
    commands = get_commands()
    checked = 0
    for name, service in services.items():
        command = service.get("command")
        if not command or service.get("image", "").startswith(("postgres", "redis")):
            continue
        argv = command if isinstance(command, list) else command.split()
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
        checked += 1
    assert checked >= 4


def test_compose_keeps_no_secret():
    text = (ROOT / "docker-compose.yml").read_text()
    env = load_compose()["x-toolhub"]["environment"]
    for key in ("SECRET_KEY", "TOOLHUB_ENCRYPTION_KEYS"):
        assert env[key].startswith("${"), key
    assert "password" not in text.lower().replace("postgres_password", "")


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
