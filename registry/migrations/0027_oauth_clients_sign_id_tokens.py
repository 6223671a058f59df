"""OpenID Connect: the clients registered before it sign their ID tokens with ToolHub's RSA
key (RS256), like every client registered since (registry.oauth.validator.sign_id_tokens)."""

from django.db import migrations


def sign_id_tokens(apps, schema_editor):
    application = apps.get_model("oauth2_provider", "Application")
    application.objects.exclude(algorithm="RS256").update(algorithm="RS256")


class Migration(migrations.Migration):
    dependencies = [
        ("registry", "0026_upstream_accounts"),
        ("oauth2_provider", "0022_refreshtoken_token_family_index"),
    ]

    operations = [migrations.RunPython(sign_id_tokens, migrations.RunPython.noop)]
