"""The demo catalog: the sample tools of the original tools module, with no real credentials."""

from __future__ import annotations

SANDBOX = "https://api.fintech-sandbox.example"
PLACEHOLDER_SECRET = "replace-me"  # noqa: S105 - a placeholder, not a credential

# The standard roles (platform-admin, reviewer) come from registry.services.standard_roles.
ROLES = {
    "fintech-analyst": "Reads market and account analytics; may not move money.",
    "customer-support": "Looks up customer accounts to answer support tickets.",
}

# (role, action, tool name or None for all tools)
GRANTS = [
    ("fintech-analyst", "execute", "earnings_call_transcript_fetcher"),
    ("fintech-analyst", "execute", "african_country_directory"),
    ("fintech-analyst", "execute", "transaction_insights"),
    ("fintech-analyst", "read", "account_balance_lookup"),
    ("customer-support", "execute", "account_balance_lookup"),
    ("customer-support", "execute", "initiate_payment"),
    ("customer-support", "read", "transaction_insights"),
]

# The built-in Python tools run without any network, so a first call succeeds offline.
# They are registered by `sync_python_tools` (scripts/demo runs it before seed_demo);
# a grant whose tool is not registered yet is skipped.
BUILTIN_GRANTS = [
    ("fintech-analyst", "execute", "calculator"),
    ("fintech-analyst", "execute", "unit_convert"),
    ("customer-support", "execute", "current_time"),
    ("customer-support", "execute", "text_stats"),
]

TOOLS: list[dict] = [
    {
        "name": "earnings_call_transcript_fetcher",
        "description": "Fetch the transcript of a listed company's earnings call for a given year and quarter.",
        "type": "http",
        "version": "1.0.0",
        "tool_metadata": {"category": "finance", "speed": "slow", "safety": "read_only"},
        "timeout_seconds": 30,
        "max_retries": 2,
        "cache_ttl_seconds": 3600,
        "parameters": [
            {
                "name": "ticker",
                "type": "string",
                "required": True,
                "description": "Stock ticker symbol, e.g. MSFT.",
                "json_schema": {"pattern": "^[A-Za-z.]{1,10}$"},
            },
            {
                "name": "year",
                "type": "integer",
                "required": True,
                "description": "Calendar year of the call.",
                "json_schema": {"minimum": 2000, "maximum": 2100},
            },
            {
                "name": "quarter",
                "type": "integer",
                "required": True,
                "description": "Fiscal quarter, 1 to 4.",
                "json_schema": {"minimum": 1, "maximum": 4},
            },
            {
                "name": "transcript",
                "parameter_type": "output",
                "type": "string",
                "description": "Full transcript text.",
            },
        ],
        "configs": [
            {"config_key": "base_url", "config_value": "https://api.api-ninjas.com"},
            {"config_key": "endpoint", "config_value": "/v1/earningstranscript"},
            {"config_key": "method", "config_value": "GET"},
            {"config_key": "auth_type", "config_value": "api_key"},
            {"config_key": "api_key_header", "config_value": "X-Api-Key"},
            {"config_key": "api_key", "config_value": PLACEHOLDER_SECRET, "is_secret": True},
        ],
    },
    {
        "name": "african_country_directory",
        "description": "List African countries with their capital, population and currencies.",
        "type": "http",
        "version": "1.0.0",
        "tool_metadata": {"category": "reference", "speed": "fast", "safety": "read_only"},
        "timeout_seconds": 15,
        "max_retries": 2,
        "cache_ttl_seconds": 86400,
        "parameters": [
            {
                "name": "fields",
                "type": "string",
                "description": "Comma-separated fields to return.",
                "default": "name,capital,population,currencies",
            },
        ],
        "configs": [
            {"config_key": "base_url", "config_value": "https://restcountries.com"},
            {"config_key": "endpoint", "config_value": "/v3.1/region/africa"},
            {"config_key": "method", "config_value": "GET"},
        ],
    },
    {
        "name": "bearer_protected_resource_probe",
        "description": "Check that a bearer-protected endpoint accepts the configured token.",
        "type": "http",
        "version": "1.0.0",
        "tool_metadata": {"category": "diagnostics", "speed": "fast", "safety": "read_only"},
        "timeout_seconds": 10,
        "parameters": [],
        "configs": [
            {"config_key": "base_url", "config_value": "https://httpbin.org"},
            {"config_key": "endpoint", "config_value": "/bearer"},
            {"config_key": "method", "config_value": "GET"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": PLACEHOLDER_SECRET, "is_secret": True},
        ],
    },
    {
        "name": "account_balance_lookup",
        "description": "Look up the current balance of a customer account. The customer's session token is passed per call and never stored.",
        "type": "http",
        "version": "1.0.0",
        "tool_metadata": {
            "category": "fintech",
            "speed": "fast",
            "safety": "read_only",
            "risk": "medium",
        },
        "timeout_seconds": 10,
        "max_retries": 1,
        "parameters": [
            {
                "name": "account_id",
                "type": "string",
                "required": True,
                "description": "Account identifier.",
                "json_schema": {"pattern": "^[A-Za-z0-9-]{4,40}$"},
            },
            {
                "name": "customer_token",
                "type": "string",
                "required": True,
                "description": "The customer's session token (sent as a header, never stored).",
            },
            {
                "name": "balance",
                "parameter_type": "output",
                "type": "number",
                "description": "Available balance.",
            },
            {
                "name": "currency",
                "parameter_type": "output",
                "type": "string",
                "description": "ISO 4217 currency code.",
            },
        ],
        "configs": [
            {"config_key": "base_url", "config_value": SANDBOX},
            {"config_key": "endpoint", "config_value": "/accounts/{account_id}/balance"},
            {"config_key": "method", "config_value": "GET"},
            {
                "config_key": "headers_input_map",
                "config_value": {
                    "customer_token": {"header": "Authorization", "template": "Bearer {value}"}
                },
            },
        ],
    },
    {
        "name": "initiate_payment",
        "description": "Initiate a payment from a customer account to a recipient. Moves money: needs human approval.",
        "type": "http",
        "version": "1.0.0",
        "tool_metadata": {
            "category": "fintech",
            "speed": "medium",
            "safety": "destructive",
            "risk": "high",
        },
        "timeout_seconds": 30,
        "max_retries": 0,
        "max_concurrency": 1,
        "requires_approval": True,
        "parameters": [
            {
                "name": "from_account",
                "type": "string",
                "required": True,
                "description": "Account to debit.",
            },
            {
                "name": "to_account",
                "type": "string",
                "required": True,
                "description": "Recipient account or IBAN.",
            },
            {
                "name": "amount",
                "type": "number",
                "required": True,
                "description": "Amount to transfer.",
                "json_schema": {"exclusiveMinimum": 0, "maximum": 1000000},
            },
            {
                "name": "currency",
                "type": "string",
                "required": True,
                "description": "ISO 4217 currency code.",
                "json_schema": {"enum": ["USD", "EUR", "GBP", "KES", "NGN", "ZAR"]},
            },
            {
                "name": "reference",
                "type": "string",
                "description": "Payment reference shown to the recipient.",
                "json_schema": {"maxLength": 140},
            },
            {
                "name": "payment_id",
                "parameter_type": "output",
                "type": "string",
                "description": "Identifier of the created payment.",
            },
        ],
        "configs": [
            {"config_key": "base_url", "config_value": SANDBOX},
            {"config_key": "endpoint", "config_value": "/payments"},
            {"config_key": "method", "config_value": "POST"},
            {"config_key": "auth_type", "config_value": "bearer_token"},
            {"config_key": "bearer_token", "config_value": PLACEHOLDER_SECRET, "is_secret": True},
        ],
    },
    {
        "name": "transaction_insights",
        "description": "Summarise an account's spending by category over a period.",
        "type": "http",
        "version": "1.0.0",
        "tool_metadata": {"category": "fintech", "speed": "medium", "safety": "read_only"},
        "timeout_seconds": 20,
        "max_retries": 1,
        "cache_ttl_seconds": 600,
        "parameters": [
            {
                "name": "account_id",
                "type": "string",
                "required": True,
                "description": "Account identifier.",
            },
            {
                "name": "period",
                "type": "string",
                "description": "Look-back window.",
                "default": "30d",
                "json_schema": {"enum": ["7d", "30d", "90d", "365d"]},
            },
            {
                "name": "categories",
                "type": "array",
                "description": "Only these spending categories.",
                "json_schema": {"items": {"type": "string"}, "uniqueItems": True},
            },
        ],
        "configs": [
            {"config_key": "base_url", "config_value": SANDBOX},
            {"config_key": "endpoint", "config_value": "/accounts/{account_id}/insights"},
            {"config_key": "method", "config_value": "GET"},
            {"config_key": "api_key_header", "config_value": "X-API-Key"},
            {"config_key": "auth_type", "config_value": "api_key"},
            {"config_key": "api_key", "config_value": PLACEHOLDER_SECRET, "is_secret": True},
        ],
    },
]


def tools_for(sandbox_url: str | None) -> list[dict]:
    """The catalog; with ``sandbox_url``, every HTTP tool calls the demo sandbox there
    (toolhub/demo_sandbox.py serves each tool's endpoint under that one base URL)."""
    if not sandbox_url:
        return TOOLS
    tools = []
    for spec in TOOLS:
        configs = [
            {**c, "config_value": sandbox_url.rstrip("/")} if c["config_key"] == "base_url" else c
            for c in spec["configs"]
        ]
        tools.append({**spec, "configs": configs})
    return tools
