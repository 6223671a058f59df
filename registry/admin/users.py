"""People in the admin (Django's Users page), with every change in the audit log.

Django's own user admin writes only its LogEntry, which anyone with database
access can edit; a governance trail must also show who made whom a superuser,
who changed a password (never the hash), which roles a person gained or lost
and who deleted an account. Role changes are recorded as the same
``role.member_added`` / ``role.member_removed`` events the API and the agent
pages write, so one filter finds them all.
"""

from __future__ import annotations

from django.contrib import admin, messages
from django.contrib.auth import get_user_model
from django.contrib.auth.admin import UserAdmin
from django.contrib.auth.forms import (
    AdminPasswordChangeForm,
    AdminUserCreationForm,
    UserChangeForm,
)
from django.core.exceptions import ValidationError
from django.db import transaction
from django.http import HttpResponseRedirect
from django.urls import reverse

from registry.admin.mixins import GuardedChangeListMixin
from registry.services import agents as agent_services
from registry.services import platform_admins as platform_admin_services
from registry.services import role_memberships as membership_services
from registry.services.audit import audit_record
from toolhub.api.params import parse_id

User = get_user_model()

_BEFORE = "_toolhub_user_before"


def user_snapshot(user) -> dict:
    """What the trail keeps of a person: flags, roles and direct rights; never the password."""
    return {
        "username": user.get_username(),
        "email": getattr(user, "email", ""),
        "first_name": getattr(user, "first_name", ""),
        "last_name": getattr(user, "last_name", ""),
        "is_active": user.is_active,
        "is_staff": user.is_staff,
        "is_superuser": user.is_superuser,
        "roles": sorted(user.groups.values_list("name", flat=True)),
        "permissions": sorted(
            f"{app}.{codename}"
            for app, codename in user.user_permissions.values_list(
                "content_type__app_label", "codename"
            )
        ),
        "has_usable_password": user.has_usable_password(),
    }


def _not_an_agents_name(username: str) -> str:
    prefix = agent_services.AGENT_USERNAME_PREFIX
    if username and username.lower().startswith(prefix):
        raise ValidationError(
            f"Names starting with '{prefix}' are agents' users: a person would pass "
            "for an agent in the audit log (and take the agent's name).",
            code="reserved",
        )
    return username


class GuardedUserCreationForm(AdminUserCreationForm):
    def clean_username(self):
        return _not_an_agents_name(super().clean_username())


class GuardedUserChangeForm(UserChangeForm):
    """Refuses the change that would leave no person able to administer the platform."""

    def clean_username(self):
        username = self.cleaned_data.get("username", "")
        if self.instance.pk is not None and hasattr(self.instance, "agent"):
            return username  # an agent's own user keeps its name
        return _not_an_agents_name(username)

    def clean(self):
        cleaned = super().clean()
        user = self.instance
        if user.pk is not None and hasattr(user, "agent"):
            self._check_agent(cleaned)
            return cleaned
        if user.pk is None:
            return cleaned
        if not platform_admin_services.leaves_no_platform_admin(without_users=[user.pk]):
            return cleaned  # someone else still is one, or nobody is one now either
        field = cleaned.get  # a field this user may not edit keeps its stored value
        permissions = field("user_permissions", user.user_permissions.all())
        groups = field("groups", user.groups.all())
        can_act = (field("is_staff", user.is_staff) and user.has_usable_password()) or (
            _holds_live_token(user)
        )
        stays = (
            field("is_active", user.is_active)
            and can_act
            and (
                field("is_superuser", user.is_superuser)
                or any(platform_admin_services.is_platform_admin_right(p) for p in permissions)
                or any(
                    platform_admin_services.is_platform_admin_right(p)
                    for g in groups
                    for p in g.permissions.all()
                )
            )
        )
        if not stays:
            raise ValidationError(
                platform_admin_services.LAST_PLATFORM_ADMIN, code="last_platform_admin"
            )
        return cleaned

    def _check_agent(self, cleaned) -> None:
        """An agent's user acts with its roles only: never staff, superuser or direct rights
        (its token would carry them: an agent is not a person)."""
        wrong = [
            name
            for name, value in (
                ("is_superuser", cleaned.get("is_superuser")),
                ("is_staff", cleaned.get("is_staff")),
                ("user_permissions", cleaned.get("user_permissions")),
            )
            if value  # a ticked flag, or any direct right
        ]
        for name in wrong:
            self.add_error(
                name,
                "This user is an agent's: it acts with its roles only (set them on the "
                "agent's page), never as staff, superuser or with direct rights.",
            )


def _holds_live_token(user) -> bool:
    return User.objects.filter(pk=user.pk).filter(platform_admin_services.live_token_q()).exists()


class GuardedPasswordChangeForm(AdminPasswordChangeForm):
    """Refuses to turn off password login for the last platform admin who could only
    act through it (no live API token): nobody could administer the platform."""

    def clean(self):
        cleaned = super().clean()
        if (
            cleaned.get("set_usable_password") is False
            and self.user.is_staff
            and platform_admin_services.leaves_no_platform_admin(without_users=[self.user.pk])
            and not _holds_live_token(self.user)
        ):
            # On the field: the admin's password page shows no form-wide errors.
            self.add_error(
                "usable_password",
                ValidationError(
                    platform_admin_services.LAST_PLATFORM_ADMIN, code="last_platform_admin"
                ),
            )
        return cleaned


if admin.site.is_registered(User):
    admin.site.unregister(User)


@admin.register(User)
class AuditedUserAdmin(GuardedChangeListMixin, UserAdmin):
    form = GuardedUserChangeForm
    add_form = GuardedUserCreationForm
    change_password_form = GuardedPasswordChangeForm

    def get_deleted_objects(self, objs, request):
        deleted, counts, perms_needed, protected = super().get_deleted_objects(objs, request)
        if platform_admin_services.leaves_no_platform_admin(
            without_users=[user.pk for user in objs]
        ):
            protected = [*protected, platform_admin_services.LAST_PLATFORM_ADMIN]
        return deleted, counts, perms_needed, protected

    def save_model(self, request, obj, form, change):
        before = user_snapshot(User.objects.get(pk=obj.pk)) if change else None
        setattr(request, _BEFORE, before)
        super().save_model(request, obj, form, change)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        user = form.instance
        before = getattr(request, _BEFORE, None)
        after = user_snapshot(user)
        roles_before = set(before["roles"]) if before else set()
        membership_services.audit_membership(
            request.user,
            user,
            added=set(after["roles"]) - roles_before,
            removed=roles_before - set(after["roles"]),
        )
        if before is None:
            audit_record(actor=request.user, action="user.created", target=user, after=after)
            return
        changed = sorted(k for k in after if after[k] != before[k] and k != "roles")
        if changed:  # roles alone: the membership events say it all
            audit_record(
                actor=request.user,
                action="user.updated",
                target=user,
                before=before,
                after={**after, "changed": changed},
            )

    def user_change_password(self, request, id, form_url=""):
        pk = parse_id(str(id))  # the route takes any text: a bad id is Django's 404
        if pk is not None and User.objects.filter(pk=pk, agent__isnull=False).exists():
            # Agents authenticate with tokens only; a password would let one into the admin.
            messages.error(request, "Agents have no password: they authenticate with tokens.")
            return HttpResponseRedirect(reverse("admin:auth_user_change", args=[id]))
        with transaction.atomic():
            stored = User.objects.filter(pk=pk).values_list("password", flat=True).first()
            response = super().user_change_password(request, id, form_url)
            user = User.objects.filter(pk=pk).first() if request.method == "POST" else None
            # Only a change that happened: Django also redirects a refused submission
            # ("Conflicting form data") back to the form.
            if user is not None and user.password != stored:
                audit_record(
                    actor=request.user,
                    action="user.password_changed",
                    target=user,
                    after={"has_usable_password": user.has_usable_password()},
                )
        return response

    def delete_model(self, request, obj):
        snapshot, target_id, target_repr = user_snapshot(obj), str(obj.pk), str(obj)
        super().delete_model(request, obj)
        audit_record(
            actor=request.user,
            action="user.deleted",
            target_type=User._meta.label_lower,
            target_id=target_id,
            target_repr=target_repr,
            before=snapshot,
        )

    def delete_queryset(self, request, queryset):
        for user in queryset:
            self.delete_model(request, user)
