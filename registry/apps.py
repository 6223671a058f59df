from django.apps import AppConfig


class RegistryConfig(AppConfig):
    name = "registry"
    verbose_name = "Registry"

    def ready(self):
        from registry.api import schema  # noqa: F401  (registers the OpenAPI auth extension)
