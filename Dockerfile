FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
# bubblewrap sandboxes command tools (docs/tool-types.md); prlimit comes with util-linux.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap \
    && rm -rf /var/lib/apt/lists/*
COPY pyproject.toml README.md ./
COPY toolhub ./toolhub
COPY registry ./registry
COPY executions ./executions
RUN pip install --no-cache-dir .
COPY . .
# Collected as production runs (DEBUG off: the manifest storage writes
# staticfiles.json, which DEBUG off needs), with throwaway keys that only exist
# in this build step. var/ (media artifacts, beat's schedule) belongs to the
# user the processes run as.
RUN DEBUG=false SECRET_KEY=collectstatic-only \
    TOOLHUB_AUDIT_SIGNING_KEY="$(python -c 'import secrets; print(secrets.token_urlsafe(48))')" \
    TOOLHUB_ENCRYPTION_KEYS="$(python -c 'from cryptography.fernet import Fernet; print(Fernet.generate_key().decode())')" \
    TOOLHUB_OIDC_RSA_PRIVATE_KEY="$(python -c 'from cryptography.hazmat.primitives.asymmetric import rsa; from cryptography.hazmat.primitives import serialization as s; print(rsa.generate_private_key(public_exponent=65537, key_size=2048).private_bytes(s.Encoding.PEM, s.PrivateFormat.PKCS8, s.NoEncryption()).decode())')" \
    TOOLHUB_VAR_DIR=/tmp/collectstatic-var python manage.py collectstatic --noinput \
    && rm -rf /tmp/collectstatic-var && mkdir -p /app/var && chown nobody /app/var
USER nobody
EXPOSE 8000
# The ASGI application under gunicorn with uvicorn workers (toolhub/gunicorn_conf.py).
CMD ["gunicorn", "toolhub.asgi:application", "--config", "python:toolhub.gunicorn_conf", "--bind", "0.0.0.0:8000", "--workers", "2"]
