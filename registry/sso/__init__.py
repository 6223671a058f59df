"""Single sign-on with the organisation's OpenID Connect identity provider.

django-allauth's OpenID Connect provider runs the authorization code flow (state,
PKCE, discovery, the token request); ToolHub's pieces here hold it to what ToolHub
needs (decision 0009, docs/security.md "Single sign-on"):

- ``config``: the one provider, built from the settings at each request (never from
  the database); off while ``TOOLHUB_SSO_ISSUER`` is unset.
- ``provider``: every ID token verified (signature against the provider's published
  keys, issuer, audience, expiry, nonce), people keyed by issuer and subject.
- ``claims``: what ToolHub reads from the verified claims (groups, name, e-mail).
- ``adapters``: no linking by e-mail, people created on their first sign-in, inactive
  people refused, roles brought in line with the groups (``registry.services.sso``).
- ``views``: the sign-in and callback routes, and the page a refusal shows.
"""
