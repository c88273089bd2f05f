# signoff's reference image: the package installed from this repository, run as a user that
# owns nothing but its home, `signoff run` as the entry point. docs/deploy.md walks through it;
# tests/test_deploy.py checks that every command and setting here is one `signoff` reads.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /src
COPY pyproject.toml README.md ./
COPY graphs ./graphs
COPY bot ./bot
RUN pip install . && rm -rf /src

RUN useradd --create-home --uid 10001 signoff
USER signoff
WORKDIR /home/signoff

# The policy file is mounted here (SIGNOFF_POLICY), the database is PostgreSQL
# (SIGNOFF_DATABASE_URL); nothing is written inside the image.
ENV SIGNOFF_POLICY=/etc/signoff/signoff.toml

EXPOSE 3000
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
    CMD ["python", "-c", "import urllib.request; urllib.request.urlopen('http://127.0.0.1:3000/healthz', timeout=4)"]

ENTRYPOINT ["signoff"]
CMD ["run", "--host", "0.0.0.0", "--port", "3000"]
