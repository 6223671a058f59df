from datetime import timedelta

from django.contrib.auth import get_user_model
from django.contrib.auth.models import Group
from django.core.management.base import BaseCommand, CommandError
from django.utils import timezone

from registry.services.agents import agent_create
from registry.services.tokens import token_issue
from toolhub.exceptions import ToolHubError


class Command(BaseCommand):
    help = (
        "Create an agent owned by a person, put it in roles and issue it a token. "
        "The token is printed as the last line of output, once; nothing else secret is printed."
    )

    def add_arguments(self, parser):
        parser.add_argument("name")
        parser.add_argument("--owner", required=True, help="Username of the person who owns it")
        parser.add_argument("--role", action="append", default=[], help="Role name (repeatable)")
        parser.add_argument("--description", default="")
        parser.add_argument("--expires-days", type=int, default=None)
        parser.add_argument("--token-name", default="cli")

    def handle(self, *args, name, owner, role, description, expires_days, token_name, **options):
        owner_user = get_user_model().objects.filter(username=owner).first()
        if owner_user is None:
            raise CommandError(f"No user named '{owner}'.")
        roles = []
        for role_name in role:
            group = Group.objects.filter(name=role_name).first()
            if group is None:
                raise CommandError(f"No role named '{role_name}'.")
            roles.append(group)
        if expires_days is not None and expires_days < 1:
            raise CommandError("--expires-days must be at least 1.")
        expires_at = timezone.now() + timedelta(days=expires_days) if expires_days else None
        try:
            agent = agent_create(
                actor=None,
                name=name,
                owner=owner_user,
                description=description,
                role_ids=[r.pk for r in roles],
            )
            token, raw = token_issue(
                actor=None, user=agent.user, name=token_name, expires_at=expires_at
            )
        except ToolHubError as exc:
            raise CommandError(exc.message) from exc
        roles_text = ", ".join(r.name for r in roles) or "no roles"
        expiry = token.expires_at.isoformat() if token.expires_at else "never"
        self.stdout.write(
            f"Created agent '{agent.name}' ({agent.pk}) owned by {owner} with {roles_text}."
        )
        self.stdout.write(f"Token {token.prefix}… expires {expiry}. It is shown once, below:")
        self.stdout.write(raw)
