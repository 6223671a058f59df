"""Secrets, keys, hosts, authentication and the transport-security defaults.

With DEBUG on and a secret unset, a development-only value is generated into
``var/`` (never into the repository); with DEBUG off each secret must be given."""

from __future__ import annotations

import re
import secrets

from cryptography.fernet import Fernet
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from django.core.exceptions import ImproperlyConfigured

from toolhub.env import env_bool, env_int, env_list, env_str
from toolhub.settings.base import DEBUG, VAR_DIR


def _dev_secret(file_name: str, make) -> str:
    """A development-only secret persisted in var/ (never in the repository)."""
    path = VAR_DIR / file_name
    if not path.exists():
        path.write_text(make())
        path.chmod(0o600)
    return path.read_text().strip()


SECRET_KEY = env_str("SECRET_KEY")
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY must be set when DEBUG is off.")
    SECRET_KEY = _dev_secret("dev-secret-key", lambda: secrets.token_urlsafe(50))

# Fernet keys for secrets at rest; the first encrypts, all decrypt (rotation).
TOOLHUB_ENCRYPTION_KEYS = env_list("TOOLHUB_ENCRYPTION_KEYS")
if not TOOLHUB_ENCRYPTION_KEYS:
    if not DEBUG:
        raise ImproperlyConfigured("TOOLHUB_ENCRYPTION_KEYS must be set when DEBUG is off.")
    TOOLHUB_ENCRYPTION_KEYS = [
        _dev_secret("dev-encryption-key", lambda: Fernet.generate_key().decode())
    ]
for _position, _key in enumerate(TOOLHUB_ENCRYPTION_KEYS, start=1):
    try:
        Fernet(_key)
    except (ValueError, TypeError):
        # Which entry, never its value (it is a secret, or a typo of one).
        raise ImproperlyConfigured(
            f"TOOLHUB_ENCRYPTION_KEYS: entry {_position} of {len(TOOLHUB_ENCRYPTION_KEYS)} is "
            "not a Fernet key (32 url-safe base64-encoded bytes, e.g. from "
            "Fernet.generate_key())."
        ) from None

# Signs the audit chain's head (manage.py audit_head) so it can be checked later.
TOOLHUB_AUDIT_SIGNING_KEY = env_str("TOOLHUB_AUDIT_SIGNING_KEY") or ""
if not TOOLHUB_AUDIT_SIGNING_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("TOOLHUB_AUDIT_SIGNING_KEY must be set when DEBUG is off.")
    TOOLHUB_AUDIT_SIGNING_KEY = _dev_secret(
        "dev-audit-signing-key", lambda: secrets.token_urlsafe(32)
    )
# A short key can be guessed, and with it every audit event forged: refused in
# production (each of a rotation's keys), named by position, never quoted.
AUDIT_SIGNING_KEY_MIN_LENGTH = 32
if not DEBUG:
    _signing_keys = [k.strip() for k in TOOLHUB_AUDIT_SIGNING_KEY.split(",") if k.strip()]
    for _position, _key in enumerate(_signing_keys, start=1):
        if len(_key) < AUDIT_SIGNING_KEY_MIN_LENGTH:
            raise ImproperlyConfigured(
                f"TOOLHUB_AUDIT_SIGNING_KEY: key {_position} of {len(_signing_keys)} is shorter "
                f"than {AUDIT_SIGNING_KEY_MIN_LENGTH} characters; generate one with "
                'python3 -c "import secrets; print(secrets.token_urlsafe(48))".'
            )

# The RSA key that signs OpenID Connect ID tokens (RS256; its public half is served at
# /oauth/jwks/). PEM, in the variable (a one-line value may write its line breaks as \n)
# or in the file TOOLHUB_OIDC_RSA_PRIVATE_KEY_FILE names. Previous keys, whose ID tokens
# relying parties may still verify, in TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE (PEMs one
# after another): served in the JWKS, never used to sign.
OIDC_RSA_KEY_MIN_BITS = 2048
_PEM = re.compile(r"-----BEGIN [A-Z ]+-----.+?-----END [A-Z ]+-----", re.DOTALL)


def _new_rsa_key() -> str:
    key = rsa.generate_private_key(public_exponent=65537, key_size=OIDC_RSA_KEY_MIN_BITS)
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ).decode()


def _rsa_keys(name: str, raw: str) -> list[str]:
    """The PEM private keys in ``raw``, each checked (named by position, never quoted)."""
    found = _PEM.findall(raw.replace("\\n", "\n"))
    if raw.strip() and not found:
        raise ImproperlyConfigured(f"{name}: no PEM private key found (-----BEGIN ... KEY-----).")
    for position, pem in enumerate(found, start=1):
        try:
            key = serialization.load_pem_private_key(pem.encode(), password=None)
        except (ValueError, TypeError):
            key = None
        if not isinstance(key, rsa.RSAPrivateKey) or key.key_size < OIDC_RSA_KEY_MIN_BITS:
            raise ImproperlyConfigured(
                f"{name}: key {position} of {len(found)} is not an unencrypted RSA private key "
                f"of at least {OIDC_RSA_KEY_MIN_BITS} bits; generate one with "
                "openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072"
            )
    return found


TOOLHUB_OIDC_RSA_PRIVATE_KEY = env_str("TOOLHUB_OIDC_RSA_PRIVATE_KEY") or ""
if not TOOLHUB_OIDC_RSA_PRIVATE_KEY.strip():
    if not DEBUG:
        raise ImproperlyConfigured(
            "TOOLHUB_OIDC_RSA_PRIVATE_KEY (or TOOLHUB_OIDC_RSA_PRIVATE_KEY_FILE) must be set "
            "when DEBUG is off: the RSA key that signs OpenID Connect ID tokens; generate one "
            "with openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:3072"
        )
    TOOLHUB_OIDC_RSA_PRIVATE_KEY = _dev_secret("dev-oidc-rsa-key.pem", _new_rsa_key)
_oidc_keys = _rsa_keys("TOOLHUB_OIDC_RSA_PRIVATE_KEY", TOOLHUB_OIDC_RSA_PRIVATE_KEY)
if len(_oidc_keys) != 1:
    raise ImproperlyConfigured(
        "TOOLHUB_OIDC_RSA_PRIVATE_KEY: give exactly one key (the one that signs); previous "
        "keys go in TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE."
    )
TOOLHUB_OIDC_RSA_PRIVATE_KEY = _oidc_keys[0]
TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE = _rsa_keys(
    "TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE",
    env_str("TOOLHUB_OIDC_RSA_PRIVATE_KEYS_INACTIVE") or "",
)

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["127.0.0.1", "localhost", "[::1]"] if DEBUG else [])
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS")

AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "guardian.backends.ObjectPermissionBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]
GUARDIAN_RAISE_403 = False
ANONYMOUS_USER_NAME = None  # no guardian anonymous user: anonymous callers get nothing

# The longest an API token may live, in days (unset: no limit). Tokens issued
# without an expiry get this one; a later expiry is refused.
TOOLHUB_TOKEN_MAX_DAYS = env_int("TOOLHUB_TOKEN_MAX_DAYS", 0, minimum=0) or None
# How long a token issued without an expiry lives (create_agent, the API, the admin); 0: until revoked.
TOOLHUB_TOKEN_DEFAULT_DAYS = env_int("TOOLHUB_TOKEN_DEFAULT_DAYS", 90, minimum=0)

# Secure defaults once DEBUG is off. TLS terminates at the reverse proxy, which
# sets X-Forwarded-Proto; HSTS and the redirect can be tuned per deployment.
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", default=not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 31536000, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", default=False)
# HSTS preload is a hard-to-undo commitment for the operator's whole domain, so
# it stays opt-in (SECURE_HSTS_PRELOAD=true) and its deploy warning is silenced.
SILENCED_SYSTEM_CHECKS = ["security.W021"]
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# /healthz and /readyz are probed over plain HTTP inside the cluster.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]
# Bearer token a Prometheus scraper presents at /metrics (empty: only reviewer/admin sessions).
TOOLHUB_METRICS_TOKEN = env_str("TOOLHUB_METRICS_TOKEN") or ""
