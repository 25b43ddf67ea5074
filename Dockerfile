FROM python:3.11-slim
WORKDIR /app
COPY pyproject.toml ./
COPY scripts/requirements.py scripts/
RUN python scripts/requirements.py > /tmp/requirements.txt && pip install --no-cache-dir -r /tmp/requirements.txt
COPY . .
RUN mkdir -p var && STATIC_ROOT=/app/var/staticfiles python manage.py collectstatic --no-input
EXPOSE 8000
