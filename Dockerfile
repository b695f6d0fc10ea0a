# One image for every ToolHub process: web (gunicorn), worker and beat (Celery), migrate.
# docker-compose.yml shows how they fit together; README "Deploying and scaling out".
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app
# bubblewrap isolates the stdio MCP servers the bridge (manage.py mcp_bridge) runs, and code
# runs (run_python) on the workers, with a seccomp filter compiled by libseccomp.
RUN apt-get update && apt-get install -y --no-install-recommends bubblewrap libseccomp2 \
    && rm -rf /var/lib/apt/lists/*
RUN useradd --system --uid 10001 --home-dir /app toolhub

# Dependencies first, so a code change does not reinstall them.
COPY pyproject.toml README.md ./
RUN mkdir apps toolhub && pip install -e . && rm -rf apps toolhub
COPY . .
# Editable, so settings find templates/ and var/ next to the code (BASE_DIR is /app).
RUN pip install --no-deps -e . \
    && DJANGO_SETTINGS_MODULE=toolhub.settings.base python manage.py collectstatic --noinput -v 0 \
    && mkdir -p var && chown -R toolhub var

USER toolhub
EXPOSE 8000
ENV DJANGO_SETTINGS_MODULE=toolhub.settings.production
# gunicorn.conf.py (in /app) sets workers, threads, timeouts, JSON logs and metrics.
CMD ["gunicorn", "toolhub.wsgi:application"]
