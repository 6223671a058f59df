from django.apps import AppConfig


class ToolhubConfig(AppConfig):
    name = "toolhub"
    verbose_name = "ToolHub"

    def ready(self):
        from django.apps import apps
        from django.db.models.signals import pre_save

        from toolhub.api.openapi import inputs  # noqa: F401  (registers the OpenAPI extensions)
        from toolhub.rows import ROW_WRITTEN_MODELS
        from toolhub.text import refuse_unstorable_fields

        # Every save of every model, whichever path it comes from (toolhub/text.py);
        # not the rows RowWriter writes (no signal runs there: their text is mended).
        for model in apps.get_models():
            if model._meta.label not in ROW_WRITTEN_MODELS:
                pre_save.connect(
                    refuse_unstorable_fields,
                    sender=model,
                    dispatch_uid=f"toolhub.unstorable_text.{model._meta.label}",
                )
