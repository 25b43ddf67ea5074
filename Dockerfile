# The portal's one image (web, worker, beat, migrate). Debian 12 (bookworm) because its
# slurm-client is Slurm 22.05, the cluster's major version: Slurm's client tools speak only to a
# controller within two major versions, and the CLI driver (the only one that can drain on 22.05)
# runs scontrol/sinfo/squeue/sacct. munge authenticates them to slurmctld.
FROM python:3.11-slim-bookworm
# libldap/libsasl2 at run time for python-ldap (LDAP sign-in); its build needs the -dev
# headers and gcc, removed again once pip has built it.
RUN apt-get update \
    && apt-get install -y --no-install-recommends slurm-client munge libldap-2.5-0 libsasl2-2 \
    && rm -rf /var/lib/apt/lists/*
# The portal runs as this user; scripts/container-entrypoint starts munged (as munge) first.
# A fixed uid, so the fabric secrets on the host can be made readable by it alone (deploy/README.md).
RUN useradd --system --uid 10001 --home-dir /app --shell /usr/sbin/nologin portal
ENV PORTAL_USER=portal PYTHONUNBUFFERED=1
WORKDIR /app
COPY pyproject.toml ./
COPY scripts/requirements.py scripts/
RUN apt-get update \
    && apt-get install -y --no-install-recommends gcc libldap2-dev libsasl2-dev \
    && python scripts/requirements.py > /tmp/requirements.txt \
    && pip install --no-cache-dir -r /tmp/requirements.txt \
    && apt-get purge -y --auto-remove gcc libldap2-dev libsasl2-dev \
    && rm -rf /var/lib/apt/lists/*
COPY . .
RUN mkdir -p var && STATIC_ROOT=/app/var/staticfiles python manage.py collectstatic --no-input \
    && chown -R portal:portal var
ENTRYPOINT ["scripts/container-entrypoint"]
EXPOSE 8000
