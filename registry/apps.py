from django.apps import AppConfig
from django.db.models.signals import post_migrate


def _put_back_generation_triggers(sender, using, plan=None, **kwargs):
    """After a migrate that leaves the registry at its latest migration, every trigger that
    moves the registry generation is (re)installed: a table rebuild in any migration can
    have dropped some (``registry/generation_triggers.py``)."""
    if plan is None:  # a flush (tests), not a migrate: no table was rebuilt
        return
    from django.db import connections
    from django.db.migrations.loader import MigrationLoader

    from registry import generation_triggers

    connection = connections[using]
    loader = MigrationLoader(connection, ignore_no_migrations=True)
    latest = [node for node in loader.graph.leaf_nodes() if node[0] == sender.label]
    if latest and all(node in loader.applied_migrations for node in latest):
        generation_triggers.install(connection)


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Registry"

    def ready(self):
        post_migrate.connect(_put_back_generation_triggers, sender=self)
        from registry.api import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from registry.authorization import is_platform_admin, is_reviewer
        from toolhub.metrics import session_scrape_check_register

        # Reviewers and platform admins may read /metrics with their admin session.
        session_scrape_check_register(lambda user: is_reviewer(user) or is_platform_admin(user))
        # "Verify now" sends its task by name, so the tasks are registered in every process.
        import registry.tasks  # noqa: F401
