"""The values of OAuth tokens ToolHub issues: prefixed like its API tokens (``th_``), so
authentication knows which kind it holds without a lookup and secret scanners know them."""

from __future__ import annotations

import secrets

ACCESS_PREFIX = "tho_"
REFRESH_PREFIX = "thr_"


def access_token(request) -> str:
    """django-oauth-toolkit's ACCESS_TOKEN_GENERATOR."""
    return ACCESS_PREFIX + secrets.token_urlsafe(32)


def refresh_token(request) -> str:
    """django-oauth-toolkit's REFRESH_TOKEN_GENERATOR."""
    return REFRESH_PREFIX + secrets.token_urlsafe(32)
