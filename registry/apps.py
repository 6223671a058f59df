from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Registry"

    def ready(self):
        from registry.access import is_platform_admin, is_reviewer
        from registry.api import schema  # noqa: F401  (registers the OpenAPI auth extension)
        from toolhub.metrics import session_scrape_check_register

        # Reviewers and platform admins may read /metrics with their admin session.
        session_scrape_check_register(lambda user: is_reviewer(user) or is_platform_admin(user))
        # "Verify now" sends its task by name, so the tasks are registered in every process.
        import registry.tasks  # noqa: F401
