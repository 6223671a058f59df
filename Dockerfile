FROM python:3.11-slim
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY toolhub ./toolhub
COPY registry ./registry
COPY executions ./executions
RUN pip install --no-cache-dir .
COPY . .
RUN DEBUG=true python manage.py collectstatic --noinput
USER nobody
EXPOSE 8000
CMD ["gunicorn", "toolhub.wsgi:application", "--bind", "0.0.0.0:8000", "--workers", "2", "--threads", "4"]
