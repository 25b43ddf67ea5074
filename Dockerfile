# The portal's one image (munge, migrate, web, worker, beat in docker-compose.yml).
#
# Debian 12 (bookworm) with Debian's own Python 3.11, because its slurm-client is Slurm 22.05,
# the cluster's major version: Slurm's client tools speak only to a controller within two major
# versions, and the CLI driver (the only one that can drain on 22.05) runs scontrol/sinfo/
# squeue/sacct. munge authenticates them to slurmctld.
#
# The base is Debian's minimal bookworm, made from Debian's packages by `make image`
# (scripts/image-build: mmdebstrap, then imported), so a machine that reaches only a Debian
# mirror can build it; where a registry is reachable, BASE_IMAGE=debian:bookworm-slim is the
# same release. deploy/README.md "The image" has its size and what takes the space.
ARG BASE_IMAGE=gpu-ops-portal-base:bookworm
FROM ${BASE_IMAGE}
# scripts/image-build removes the images a rebuild replaced by this label.
LABEL org.opencontainers.image.title=gpu-ops-portal
# Only what runs: Python, Slurm's client tools and munge, CA certificates for ldaps:// and the
# site's HTTPS services, and Debian's python-ldap (for django-auth-ldap): built for this Python
# and libldap already, so the image needs no compiler and no headers.
RUN apt-get update \
    && apt-get install -y --no-install-recommends python3 python3-venv python3-ldap \
        slurm-client munge ca-certificates \
    && rm -rf /var/lib/apt/lists/* /var/cache/apt/* /var/cache/debconf/*-old /var/log/apt \
        /var/log/dpkg.log
# Everything runs as this user, munged included (the munge service): a fixed uid, so the
# secrets on the host can be made readable by it alone (deploy/README.md). /run/munge is the
# socket directory the munge service shares with the others (munged wants it its own).
RUN groupadd --system --gid 10001 portal \
    && useradd --system --uid 10001 --gid portal --home-dir /app --shell /usr/sbin/nologin portal \
    && install -d -o portal -g portal -m 0755 /run/munge \
    && install -d -o portal -g portal -m 0700 /var/lib/munge
COPY pyproject.toml /app/
COPY scripts/requirements.py /app/scripts/
# The virtual environment sees Debian's packages (python-ldap), pip installs the rest. A site
# behind a TLS-inspecting proxy passes its CA bundle as the build secret `build-ca`
# (make image BUILD_CA_BUNDLE=...): mounted for this step only, never stored in a layer.
RUN --mount=type=secret,id=build-ca,target=/run/secrets/build-ca \
    if [ -s /run/secrets/build-ca ]; then export PIP_CERT=/run/secrets/build-ca; fi \
    && python3 -m venv --system-site-packages /opt/portal-venv \
    && python3 /app/scripts/requirements.py > /tmp/requirements.txt \
    && /opt/portal-venv/bin/pip install --no-cache-dir --disable-pip-version-check \
        -r /tmp/requirements.txt \
    # pip and setuptools only install: the portal never runs them. Nor translations
    # (USE_I18N = False): Django's and the other apps' catalogues are a tenth of the image.
    && /opt/portal-venv/bin/pip uninstall --yes --quiet pip setuptools \
    && find /opt/portal-venv -path '*/locale/*' \( -name '*.po' -o -name '*.mo' \) -delete \
    && rm /tmp/requirements.txt
ENV PATH=/opt/portal-venv/bin:$PATH PORTAL_USER=portal PYTHONUNBUFFERED=1 PYTHONDONTWRITEBYTECODE=1
WORKDIR /app
COPY . .
# Compiled here: the portal user cannot write next to the code, and every start would compile.
RUN python -m compileall -q -j 0 /app \
    && mkdir -p var && STATIC_ROOT=/app/var/staticfiles python manage.py collectstatic --no-input \
    && chown -R portal:portal var
USER portal
ENTRYPOINT ["scripts/container-entrypoint"]
EXPOSE 8000
