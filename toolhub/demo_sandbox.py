"""Fake upstream APIs for the demo catalog, served on loopback in demo mode only.

The demo's HTTP tools (registry/demo.py) were written against public hosts: an
earnings-call transcript API, a country directory, an httpbin-style bearer
check and a fintech sandbox (accounts, payments). ``./scripts/demo`` mounts
these views (``TOOLHUB_DEMO_SANDBOX``, refused with DEBUG off), points the
demo's HTTP tools here and opens the egress guard for this address only, so
the demo's calls succeed on a machine without internet.

Every answer is fake and deterministic: derived from the request alone, the
same on every machine and every run. Nothing is stored. Credentials are checked
for presence only (the demo's secrets are placeholders).
"""

from __future__ import annotations

import hashlib
import json
import re

from django.http import HttpRequest, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

# The figures below are the sandbox's, not the world's: good enough to read, never current.
AS_OF = "2026-01-01T00:00:00Z"
CURRENCIES = ("USD", "EUR", "GBP", "KES", "NGN", "ZAR")
CATEGORIES = ("groceries", "transport", "utilities", "dining", "travel", "health")
PERIOD_DAYS = {"7d": 7, "30d": 30, "90d": 90, "365d": 365}
ACCOUNT_ID = re.compile(r"^[A-Za-z0-9-]{4,40}$")
COUNTRIES = [
    {
        "name": {"common": "Kenya", "official": "Republic of Kenya"},
        "capital": ["Nairobi"],
        "population": 53771300,
        "currencies": {"KES": {"name": "Kenyan shilling", "symbol": "Sh"}},
    },
    {
        "name": {"common": "Nigeria", "official": "Federal Republic of Nigeria"},
        "capital": ["Abuja"],
        "population": 206139587,
        "currencies": {"NGN": {"name": "Nigerian naira", "symbol": "₦"}},
    },
    {
        "name": {"common": "South Africa", "official": "Republic of South Africa"},
        "capital": ["Pretoria", "Bloemfontein", "Cape Town"],
        "population": 59308690,
        "currencies": {"ZAR": {"name": "South African rand", "symbol": "R"}},
    },
    {
        "name": {"common": "Ghana", "official": "Republic of Ghana"},
        "capital": ["Accra"],
        "population": 31072945,
        "currencies": {"GHS": {"name": "Ghanaian cedi", "symbol": "₵"}},
    },
    {
        "name": {"common": "Egypt", "official": "Arab Republic of Egypt"},
        "capital": ["Cairo"],
        "population": 102334403,
        "currencies": {"EGP": {"name": "Egyptian pound", "symbol": "£"}},
    },
    {
        "name": {"common": "Senegal", "official": "Republic of Senegal"},
        "capital": ["Dakar"],
        "population": 16743930,
        "currencies": {"XOF": {"name": "West African CFA franc", "symbol": "Fr"}},
    },
]


def _error(status: int, message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=status)


def _digest(*parts: object) -> int:
    """A stable number from the request's values: the sandbox's only source of data."""
    text = "|".join(str(part) for part in parts)
    return int.from_bytes(hashlib.sha256(text.encode()).digest()[:8], "big")


def _bearer(request: HttpRequest) -> str:
    scheme, _, token = request.headers.get("Authorization", "").partition(" ")
    return token.strip() if scheme.lower() == "bearer" else ""


def _account(account_id: str) -> JsonResponse | None:
    if not ACCOUNT_ID.match(account_id):
        return _error(404, f"no account {account_id!r}")
    return None


@require_GET
def earnings_transcript(request: HttpRequest) -> JsonResponse:
    if not request.headers.get("X-Api-Key"):
        return _error(401, "missing X-Api-Key header")
    ticker = request.GET.get("ticker", "").upper()
    year, quarter = request.GET.get("year", ""), request.GET.get("quarter", "")
    if not ticker or not year.isdigit() or quarter not in {"1", "2", "3", "4"}:
        return _error(400, "ticker, year and quarter (1-4) are required")
    growth = _digest(ticker, year, quarter) % 200 / 10
    transcript = (
        f"Operator: Good afternoon and welcome to {ticker}'s Q{quarter} {year} earnings call. "
        f"CEO: Revenue grew {growth:.1f}% year over year, driven by our core business. "
        "CFO: We are reaffirming our guidance for the full year. "
        "Operator: This concludes today's call. (ToolHub demo sandbox: fictional text.)"
    )
    return JsonResponse(
        {"ticker": ticker, "year": int(year), "quarter": int(quarter), "transcript": transcript}
    )


@require_GET
def african_countries(request: HttpRequest) -> JsonResponse:
    fields = [f.strip() for f in request.GET.get("fields", "").split(",") if f.strip()]
    countries = [
        {key: value for key, value in country.items() if not fields or key in fields}
        for country in COUNTRIES
    ]
    return JsonResponse(countries, safe=False)


@require_GET
def bearer_probe(request: HttpRequest) -> JsonResponse:
    # httpbin echoes the token back; the sandbox does not (it would be a secret in the output).
    if not _bearer(request):
        return _error(401, "missing bearer token")
    return JsonResponse({"authenticated": True})


@require_GET
def account_balance(request: HttpRequest, account_id: str) -> JsonResponse:
    if not _bearer(request):
        return _error(401, "missing customer session token")
    if refusal := _account(account_id):
        return refusal
    number = _digest("balance", account_id)
    return JsonResponse(
        {
            "account_id": account_id,
            "balance": round(number % 5_000_000 / 100, 2),
            "currency": CURRENCIES[number % len(CURRENCIES)],
            "as_of": AS_OF,
        }
    )


@require_GET
def account_insights(request: HttpRequest, account_id: str) -> JsonResponse:
    if not request.headers.get("X-API-Key"):
        return _error(401, "missing X-API-Key header")
    if refusal := _account(account_id):
        return refusal
    period = request.GET.get("period", "30d")
    if period not in PERIOD_DAYS:
        return _error(400, f"period must be one of {', '.join(PERIOD_DAYS)}")
    wanted = {c for value in request.GET.getlist("categories") for c in value.split(",") if c}
    spending = {
        category: round(_digest(account_id, category) % 40_000 / 100 * PERIOD_DAYS[period] / 30, 2)
        for category in CATEGORIES
        if not wanted or category in wanted
    }
    return JsonResponse(
        {
            "account_id": account_id,
            "period": period,
            "currency": CURRENCIES[_digest("balance", account_id) % len(CURRENCIES)],
            "spending_by_category": spending,
            "total": round(sum(spending.values()), 2),
        }
    )


@csrf_exempt
@require_POST
def create_payment(request: HttpRequest) -> JsonResponse:
    if not _bearer(request):
        return _error(401, "missing bearer token")
    try:
        body = json.loads(request.body or b"{}")
    except ValueError:
        return _error(400, "the body is not JSON")
    if not isinstance(body, dict):
        return _error(400, "the body is not a JSON object")
    missing = [k for k in ("from_account", "to_account", "amount", "currency") if k not in body]
    if missing:
        return _error(400, f"missing field(s): {', '.join(missing)}")
    payment = "PAY-" + f"{_digest(json.dumps(body, sort_keys=True)):016X}"[:12]
    fields = ("from_account", "to_account", "amount", "currency", "reference")
    return JsonResponse(
        {"payment_id": payment, "status": "accepted", **{k: body.get(k) for k in fields}},
        status=201,
    )


urlpatterns = [
    path("v1/earningstranscript", earnings_transcript),
    path("v3.1/region/africa", african_countries),
    path("bearer", bearer_probe),
    path("accounts/<str:account_id>/balance", account_balance),
    path("accounts/<str:account_id>/insights", account_insights),
    path("payments", create_payment),
]
