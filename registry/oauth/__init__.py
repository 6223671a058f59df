"""ToolHub as an OAuth 2.1 authorization server (django-oauth-toolkit underneath).

- ``resources``: the resources a token may be for, and how one is named;
- ``validator``: the toolkit's validator with ToolHub's rules (one resource per token,
  http redirects to loopback only, the client-credentials client acting as its agent)
  and the audit events of what the server issues and revokes;
- ``consents``: remembered consent, and revoking it with the client's tokens;
- ``delegation``: what a presented OAuth access token establishes (person, client,
  scopes, resource) for the REST API and the MCP endpoint;
- ``views``: the consent page and the person's "My connections" page.
"""
