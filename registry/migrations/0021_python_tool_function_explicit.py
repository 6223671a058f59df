"""Every Python tool stores the function it runs.

Until now a Python tool without a ``function`` config ran the function its name
named, so renaming it changed what ran. The executor no longer reads the name:
each such tool gets the ``function`` config its name resolved to, so it keeps
running what it ran (and only platform admins change it from now on).
"""

from django.db import migrations


def _unset(config) -> bool:
    if config.is_secret:
        return not config.encrypted_value
    value = config.plain_value
    return value is None or (isinstance(value, str) and not value.strip())


def store_functions(apps, schema_editor):
    Tool = apps.get_model("registry", "Tool")
    ToolConfig = apps.get_model("registry", "ToolConfig")
    for tool in Tool.objects.filter(type="python").iterator():
        config = ToolConfig.objects.filter(tool=tool, config_key="function").first()
        if config is None:
            ToolConfig.objects.create(
                tool=tool, config_key="function", plain_value=tool.name, is_secret=False
            )
        elif _unset(config):
            config.plain_value, config.encrypted_value, config.is_secret = tool.name, "", False
            config.save(update_fields=["plain_value", "encrypted_value", "is_secret"])


class Migration(migrations.Migration):
    dependencies = [("registry", "0020_verification_runs_protected")]

    operations = [migrations.RunPython(store_functions, migrations.RunPython.noop)]
