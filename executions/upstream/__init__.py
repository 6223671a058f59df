"""ToolHub as an OAuth client of upstream providers (``registry.models.upstream``).

- ``client``: the requests to a provider's token and revocation endpoints (the
  authorization code, a refresh, an RFC 8693 token exchange, an RFC 7009 revocation),
  each through the egress guard and the HTTP executor's pinned transport, bounded by
  ``TOOLHUB_UPSTREAM_TOKEN_TIMEOUT`` in all (a provider that hangs fails, it never
  holds a call), and the authorization URL a person is sent to (PKCE S256, state).

Nothing here writes: ``executions.services.upstream_accounts`` stores what a provider
answered through ``registry.services.upstream``, audited.
"""
