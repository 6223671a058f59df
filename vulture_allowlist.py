"""Names vulture cannot see used, each with why it stays (the dead-code check's allow-list).

Vulture reads this file as code that uses the names below; nothing imports it.
Django and DRF names found by convention are ignored in pyproject.toml
([tool.vulture]); what is here is specific to ToolHub.
"""

# Entry points named in settings, URLs or by the servers (ASGI/WSGI, apps, middleware,
# DRF's authentication, renderers, parsers, exception handler, OpenAPI extensions).
application
ExecutionsConfig
RegistryConfig
ToolhubConfig
MetricsMiddleware
RequestIDMiddleware
RequestIDLogFilter
TraceLogFilter  # a logging filter named in settings.LOGGING
RequestShapeMiddleware
UnreadBodyDrainMiddleware
DatabaseUnavailableMiddleware
BearerTokenAuthentication
BearerTokenScheme
EncodableJSONRenderer
LimitedJSONParser
exception_handler
PaginatedListExtension
map_serializer
document_errors  # drf-spectacular postprocessing hook (settings), takes ``generator``
document_parameters  # drf-spectacular postprocessing hook (settings)
document_request_bodies  # drf-spectacular postprocessing hook (settings)
match_subclasses  # drf-spectacular extension option
generator
content_negotiation_class
default_detail
MESSAGE_STORAGE
AUTHENTICATION_BACKENDS
child_exit  # gunicorn's server hook (toolhub/gunicorn_conf.py)
worker_class  # a gunicorn setting (toolhub/gunicorn_conf.py)
keepalive  # a gunicorn setting (toolhub/gunicorn_conf.py)
_drop_unusable_connections  # a Celery signal receiver (connected by decorator)
warn_without_sandbox  # a Celery signal receiver (connected by decorator)
_trace_worker_process  # Celery signal receivers (toolhub/celery.py): traces in workers
_trace_unforked_worker
_size_worker_connections
_flush_traces
_trace_ids_in_worker_logs
teardown  # toolhub.tracing: turns traces off again between tests (tests/executions/test_tracing.py)
ops_class  # Django's database backend reads it
prepare_threshold  # psycopg's connection attribute, set on each new connection
cursor_factory  # psycopg's connection attribute (the database executor keeps the plain cursors)
connect_unix_socket  # httpcore.NetworkBackend's method (the HTTP executor's pinned backend)

# Hooks Django's forms and admin call by name.
bound_data
_post_clean
has_output
change_password_form
result_list
show_facets
force  # DRF's perform_content_negotiation signature

# Form and serializer fields declared for their side effects (rendered, validated).
wait_seconds
agent_owner
clear_webhook_secret
clear_auth_token
tool_naming
expires_in_days
default_json
file
has_webhook_secret
tool_count
cached_from
has_permission
required_action
default_value
tool_ids  # ToolsetInputSerializer
prepopulated_fields  # the toolset admin's slug from its name
middleware  # the mcp SDK server's middleware list (executions/mcp_server/server.py)

# Model fields and choices: columns of the schema, read through the ORM or SQL.
decided_by
decided_at
proxy
content_object
occurred_at
actor_name
actor_ref
sealed_at
removed_before
created_by
ROLE
INTEGER
NUMBER
BOOLEAN
ARRAY
NULL
STATUS_TRANSITIONS  # the trigger's migration and the state-machine tests read it
latency_ms  # part of every executor's result shape
__toolhub_tool__  # marks a function as a registered Python tool
_request  # httpx reads the request off the response
started_at_sequence  # in audit_verify's JSON report (API and --json)
findings_truncated  # the integrity panel (a template) reads it

# Used by the tests only, to reset process state between cases.
clear_dns_cache
close_transport
permissions_by_label
role_permission_choices  # what a role may carry: the oracle the role form's tests check against
generic_representation  # the tests hold the fast to_representation equal to DRF's own

# The operators' interface to guards (docs/governance.md, "Guards"): their functions
# read the context's fields and their tests call the helpers.
guard_name
check_before
check_after
# django-oauth-toolkit's swappable model settings, read by Django and the toolkit by name.
OAUTH2_PROVIDER_APPLICATION_MODEL
OAUTH2_PROVIDER_ACCESS_TOKEN_MODEL
OAUTH2_PROVIDER_REFRESH_TOKEN_MODEL
OAUTH2_PROVIDER_ID_TOKEN_MODEL
OAUTH2_PROVIDER_GRANT_MODEL
# Named by django-oauth-toolkit's settings (toolhub/settings/oauth.py) and read by Django.
OAuthClientAdmin
ToolHubOAuth2Validator
GuardedMetadataFetcher
fetch
access_token
refresh_token
OAUTH2_PROVIDER
redirect_authenticated_user
granted_at
revoked_by
person_id

# Single sign-on: django-allauth finds these by the dotted paths in toolhub/settings/sso.py
# (ACCOUNT_ADAPTER, SOCIALACCOUNT_ADAPTER, the provider_class) and calls their hooks by name.
SocialAccountAdapter
AccountAdapter
ToolHubOIDCProvider
list_apps
can_authenticate_by_email
is_open_for_signup
is_auto_signup_allowed
on_authentication_error
respond_user_inactive
complete_login
oauth2_adapter_class
extract_uid

# People's upstream accounts: model fields the admin and the "My upstream accounts" page
# show (registry/models/upstream.py), and a form field the admin renders and reads back.
refreshed_at
refreshed_by
clear_client_secret
abstract  # Django Meta options of abstract models

# OpenID Connect: the error the toolkit reads back from the oauthlib request at the
# userinfo endpoint (registry/oauth/validator.py).
oauth2_error
