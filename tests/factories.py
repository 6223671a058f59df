"""Factories for tests (factory_boy) and small builders."""

from __future__ import annotations

import factory
from django.contrib.auth import get_user_model

from registry.models import ApiToken, Tool
from registry.models.tokens import generate_token, hash_token


def make_user(username: str, **extra):
    User = get_user_model()
    user = User.objects.create_user(username=username, password="pw-" + username, **extra)
    return user


def make_token(user, *, name: str = "test", **extra) -> str:
    raw = generate_token()
    ApiToken.objects.create(
        user=user, name=name, prefix=raw[:10], token_hash=hash_token(raw), **extra
    )
    return raw


class ToolFactory(factory.django.DjangoModelFactory):
    class Meta:
        model = Tool

    name = factory.Sequence(lambda n: f"tool_{n}")
    description = factory.Faker("sentence")
    type = "http"
    tool_metadata = factory.LazyFunction(lambda: {"category": "testing"})
