"""The Celery application. Tasks live in each app's ``tasks.py``."""

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "toolhub.settings")

app = Celery("toolhub")
app.config_from_object("django.conf:settings", namespace="CELERY")
# Celery's Django fixup closes the database connection after every task unless
# this (un-namespaced) key is set: a new PostgreSQL session per execution cost
# ~15 ms of CPU. Keep connections for this many tasks (Django's CONN_MAX_AGE and
# health checks still apply).
app.conf["CELERY_DB_REUSE_MAX"] = int(os.environ.get("TOOLHUB_WORKER_DB_REUSE_MAX", "1000"))
app.autodiscover_tasks()
