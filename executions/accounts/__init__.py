"""A person's own upstream accounts, as pages (``executions.services.upstream_accounts``):
"My upstream accounts", connecting one (the provider's sign-in and back) and
disconnecting it. Every page needs a signed-in person (``LOGIN_URL``)."""
