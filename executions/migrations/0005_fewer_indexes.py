"""Fewer indexes on executions: each one costs both writes of every call.

The foreign keys tool, agent, principal and role are found through the
composite indexes that lead with them; role and cached_from are set on few
calls, so their indexes are partial (only those calls write an entry).
"""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("auth", "0012_alter_user_first_name_max_length"),
        ("executions", "0004_tool_agent_index"),
        ("registry", "0008_fewer_audit_indexes"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.RemoveIndex(
            model_name="execution",
            name="exec_role_time_idx",
        ),
        migrations.AlterField(
            model_name="execution",
            name="agent",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="executions",
                to="registry.agent",
            ),
        ),
        migrations.AlterField(
            model_name="execution",
            name="cached_from",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                help_text="Answered from the cached result of this earlier execution.",
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="executions.execution",
            ),
        ),
        migrations.AlterField(
            model_name="execution",
            name="principal",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to=settings.AUTH_USER_MODEL,
            ),
        ),
        migrations.AlterField(
            model_name="execution",
            name="role",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="+",
                to="auth.group",
            ),
        ),
        migrations.AlterField(
            model_name="execution",
            name="tool",
            field=models.ForeignKey(
                blank=True,
                db_index=False,
                null=True,
                on_delete=django.db.models.deletion.PROTECT,
                related_name="executions",
                to="registry.tool",
            ),
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("role__isnull", False)),
                fields=["role", "-created_at"],
                name="exec_role_time_idx",
            ),
        ),
        migrations.AddIndex(
            model_name="execution",
            index=models.Index(
                condition=models.Q(("cached_from__isnull", False)),
                fields=["cached_from"],
                name="exec_cached_from_idx",
            ),
        ),
    ]
