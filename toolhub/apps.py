from django.apps import AppConfig


class ToolhubConfig(AppConfig):
    name = "toolhub"
    verbose_name = "ToolHub"
