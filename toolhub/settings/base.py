"""Where ToolHub lives and what Django runs: paths, DEBUG, apps, middleware, templates,
languages and static files. Every other settings module reads ``DEBUG`` and the paths
from here."""

from __future__ import annotations

from pathlib import Path

from toolhub.env import env_bool, env_str

BASE_DIR = Path(__file__).resolve().parent.parent.parent
# ToolHub's own files (the embedded database, development secrets, beat's state): var/.
VAR_DIR = Path(env_str("TOOLHUB_VAR_DIR") or BASE_DIR / "var")
VAR_DIR.mkdir(parents=True, exist_ok=True)

DATABASE_URL = env_str("DATABASE_URL")
# No DATABASE_URL: the embedded shape (SQLite, local-memory cache, DEBUG on).
EMBEDDED = not DATABASE_URL
DEBUG = env_bool("DEBUG", default=EMBEDDED)

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "guardian",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    # Single sign-on (toolhub/settings/sso.py): django-allauth's OpenID Connect provider.
    # Before the registry, whose admin replaces allauth's pages.
    "allauth",
    "allauth.account",
    "allauth.socialaccount",
    "allauth.socialaccount.providers.openid_connect",
    # The OAuth 2.1 server (toolhub/settings/oauth.py). Its admin module imports the
    # registry's admins (the classes its settings name), so it comes after allauth's.
    "oauth2_provider",
    "toolhub",
    "registry",
    "executions",
]

MIDDLEWARE = [
    "toolhub.metrics.MetricsMiddleware",
    "toolhub.middleware.RequestIDMiddleware",
    "toolhub.middleware.UnreadBodyDrainMiddleware",
    "toolhub.middleware.RequestShapeMiddleware",
    "django.middleware.security.SecurityMiddleware",
    # Serves the admin's and Swagger UI's static files under gunicorn (no CDN, no nginx needed).
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # django-allauth's request context, which its sign-in flow reads (single sign-on).
    "allauth.account.middleware.AccountMiddleware",
    # A page whose view gets no database connection answers 503 (the API: its handler).
    "toolhub.middleware.DatabaseUnavailableMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

# Admin messages live in the session. The default (cookie, then session) builds
# a cookie signer on every request, API calls included: 3 % of the web
# process's CPU under load (bench/README.md), for messages only the admin shows.
MESSAGE_STORAGE = "django.contrib.messages.storage.session.SessionStorage"

ROOT_URLCONF = "toolhub.urls"
WSGI_APPLICATION = "toolhub.wsgi.application"
ASGI_APPLICATION = "toolhub.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
# The admin's dates and times to the second, with the zone (toolhub/formats/en/formats.py).
FORMAT_MODULE_PATH = ["toolhub.formats"]
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or VAR_DIR / "media")
