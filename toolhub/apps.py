from django.apps import AppConfig


class ToolhubConfig(AppConfig):
    name = "toolhub"
    verbose_name = "ToolHub"

    def ready(self):
        from django.db.models.signals import pre_save

        from toolhub.text import refuse_unstorable_fields

        # Every save of every model, whichever path it comes from (toolhub/text.py).
        pre_save.connect(refuse_unstorable_fields, dispatch_uid="toolhub.unstorable_text")
