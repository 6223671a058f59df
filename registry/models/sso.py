"""What membership of an identity provider's group gives a person who signs in with it."""

from __future__ import annotations

from django.contrib.auth.models import Group
from django.db import models
from django.db.models import Q


class SsoGroupMapping(models.Model):
    """Members of the identity provider's group ``idp_group`` hold ``role`` and, with
    ``makes_staff``, may use the admin. Brought in line at every single sign-on
    (``registry.services.sso``); ``TOOLHUB_SSO_GROUP_ROLES`` holds more of them."""

    idp_group = models.CharField(
        "identity provider group",
        max_length=255,
        help_text="Exactly as the identity provider's groups claim lists it.",
    )
    role = models.ForeignKey(
        Group,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="sso_group_mappings",
        help_text="The role its members hold (platform-admin makes platform admins, reviewer "
        "reviewers). A person who leaves the group loses it at their next sign-in.",
    )
    makes_staff = models.BooleanField(
        "gives admin access",
        default=False,
        help_text="Its members are staff: they may sign in to the admin.",
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["idp_group", "role__name"]
        verbose_name = "SSO group mapping"
        constraints = [
            models.UniqueConstraint(fields=["idp_group", "role"], name="sso_mapping_group_role"),
            models.UniqueConstraint(
                fields=["idp_group"],
                condition=Q(role__isnull=True),
                name="sso_mapping_group_without_role",
            ),
            models.CheckConstraint(
                condition=Q(role__isnull=False) | Q(makes_staff=True),
                name="sso_mapping_gives_something",
            ),
        ]

    def __str__(self) -> str:
        gives = [self.role.name] if self.role_id else []
        if self.makes_staff:
            gives.append("admin access")
        return f"{self.idp_group} → {', '.join(gives)}"
