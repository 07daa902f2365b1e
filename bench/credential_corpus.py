"""The labelled sets that measure credential detection (issue 26, item 10).

``credential_samples()``: synthetic credentials in at least 60 formats, generated from a
fixed seed in each format's real shape (prefix, length, alphabet), each in an ordinary
sentence or assignment; nothing here is a real secret. ``ordinary_lines()``: text an agent
stores every day that must be accepted: lines of this repository's own source, its
git log messages, and generated log lines full of commit SHAs, image digests, trace ids,
UUIDs, npm integrity strings, IP addresses and timestamps.

Measured by ``tests/credentials/test_rates.py`` and ``python -m bench.credentials``.
"""

from __future__ import annotations

import base64
import json
import random
import string
import subprocess
import uuid
from pathlib import Path

ALNUM = string.ascii_letters + string.digits
UPPER = string.ascii_uppercase + string.digits
LOWER = string.ascii_lowercase + string.digits
HEX = "0123456789abcdef"
BASE32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
B64 = ALNUM + "+/"
URLSAFE = ALNUM + "-_"
REPO = Path(__file__).resolve().parent.parent


def _r(rng: random.Random, n: int, alphabet: str = ALNUM) -> str:
    return "".join(rng.choice(alphabet) for _ in range(n))


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _jwt(rng: random.Random) -> str:
    head = _b64url(json.dumps({"alg": "HS256", "typ": "JWT"}).encode())
    body = _b64url(json.dumps({"sub": str(rng.randint(1, 10**9)), "iat": 1700000000}).encode())
    return f"{head}.{body}.{_b64url(rng.randbytes(32))}"


def _pem(rng: random.Random, label: str) -> str:
    body = base64.b64encode(rng.randbytes(96)).decode()
    return f"-----BEGIN {label}-----\n{body[:64]}\n{body[64:]}\n-----END {label}-----"


def credential_samples(seed: int = 26) -> list[tuple[str, str]]:
    """(format, text): every text must be refused."""
    rng = random.Random(seed)
    r = lambda n, a=ALNUM: _r(rng, n, a)  # noqa: E731 (a local shorthand)
    formats: list[tuple[str, str]] = [
        ("GitHub classic token", f"my GitHub token is ghp_{r(36)}"),
        ("GitHub OAuth token", f"export GH_TOKEN=gho_{r(36)}"),
        ("GitHub user-to-server token", f"the app acts with ghu_{r(36)}"),
        ("GitHub server-to-server token", f"installation token ghs_{r(36)}"),
        ("GitHub refresh token", f"refresh with ghr_{r(36)}"),
        ("GitHub fine-grained token", f"CI uses github_pat_{r(22)}_{r(59)}"),
        ("GitLab personal token", f"glpat-{r(20, URLSAFE)} is the deploy token"),
        ("GitLab deploy token", f"pull with gldt-{r(20, URLSAFE)}"),
        ("GitLab runner token", f"register the runner with glrt-{r(20, URLSAFE)}"),
        ("GitLab trigger token", f"trigger with glptt-{r(40, HEX)}"),
        ("AWS access key id", f"AWS_ACCESS_KEY_ID=AKIA{r(16, BASE32)}"),
        ("AWS temporary key id", f"the session key is ASIA{r(16, BASE32)}"),
        ("AWS secret access key", f"aws_secret_access_key = {r(40, B64)}"),
        ("Slack bot token", f"the bot posts with xoxb-{r(12, string.digits)}-"
                            f"{r(13, string.digits)}-{r(24, LOWER)}"),
        ("Slack user token", f"xoxp-{r(12, string.digits)}-{r(12, string.digits)}-"
                             f"{r(13, string.digits)}-{r(32, HEX)}"),
        ("Slack app token", f"socket mode uses xapp-1-A{r(10, UPPER)}-{r(13, string.digits)}-"
                            f"{r(64, HEX)}"),
        ("Slack webhook", f"alerts go to https://hooks.slack.com/services/T{r(8, UPPER)}/"
                          f"B{r(8, UPPER)}/{r(24)}"),
        ("Stripe live secret key", f"STRIPE_KEY=sk_live_{r(24)}"),
        ("Stripe test secret key", f"use sk_test_{r(24)} in staging"),
        ("Stripe restricted key", f"the reporting job has rk_live_{r(24)}"),
        ("Stripe webhook secret", f"verify signatures with whsec_{r(32)}"),
        ("OpenAI legacy key", f"OPENAI_API_KEY=sk-{r(20)}T3BlbkFJ{r(20)}"),
        ("OpenAI project key", f"the eval runs with sk-proj-{r(64, URLSAFE)}T3BlbkFJ{r(20)}"),
        ("Anthropic key", f"ANTHROPIC_API_KEY=sk-ant-api03-{r(93, URLSAFE)}AA"),
        ("Google API key", f"maps use AIza{r(35, URLSAFE)}"),
        ("Google OAuth client secret", f"client secret GOCSPX-{r(28, URLSAFE)}"),
        ("Google OAuth access token", f"curl -H 'Authorization: Bearer ya29.{r(120, URLSAFE)}'"),
        ("Twilio API key", f"twilio key SK{r(32, HEX)}"),
        ("SendGrid key", f"mail goes out with SG.{r(22, URLSAFE)}.{r(43, URLSAFE)}"),
        ("Mailgun key", f"mailgun: key-{r(32, HEX)}"),
        ("Mailchimp key", f"the newsletter key is {r(32, HEX)}-us{rng.randint(1, 20)}"),
        ("npm token", f"//registry.npmjs.org/:_authToken=npm_{r(36)}"),
        ("PyPI token", f"password = pypi-AgEIcHlwaS5vcmc{r(70, URLSAFE)}"),
        ("Discord bot token", f"bot token {r(1, 'MN')}{r(23, URLSAFE)}.{r(6, URLSAFE)}."
                              f"{r(27, URLSAFE)}"),
        ("Telegram bot token", f"the bot is {rng.randint(10**8, 10**10)}:AA{r(33, URLSAFE)}"),
        ("JSON Web Token", f"session cookie {_jwt(rng)}"),
        ("RSA private key", _pem(rng, "RSA PRIVATE KEY")),
        ("EC private key", _pem(rng, "EC PRIVATE KEY")),
        ("OpenSSH private key", _pem(rng, "OPENSSH PRIVATE KEY")),
        ("PKCS#8 private key", _pem(rng, "PRIVATE KEY")),
        ("PKCS#8 encrypted private key", _pem(rng, "ENCRYPTED PRIVATE KEY")),
        ("PGP private key", _pem(rng, "PGP PRIVATE KEY BLOCK")),
        ("PuTTY private key", f"PuTTY-User-Key-File-3: ssh-ed25519\nPrivate-Lines: 1\n"
                              f"{base64.b64encode(rng.randbytes(48)).decode()}"),
        ("URL with a password", f"clone https://deploy:{r(16)}@git.example.com/app.git"),
        ("PostgreSQL URL with a password",
         f"DATABASE_URL=postgres://app:{r(14)}@db.internal:5432/app"),
        ("MongoDB URL with a password",
         f"connect to mongodb+srv://svc:{r(16)}@cluster0.example.mongodb.net/prod"),
        ("Redis URL with a password", f"cache at redis://:{r(20)}@cache.internal:6379/0"),
        ("Azure storage key", f"DefaultEndpointsProtocol=https;AccountName=acme;AccountKey="
                              f"{base64.b64encode(rng.randbytes(64)).decode()};"
                              "EndpointSuffix=core.windows.net"),
        ("Azure SAS token", f"https://acme.blob.core.windows.net/c?sv=2022-11-02&ss=b&srt=o"
                            f"&sp=r&se=2030-01-01T00:00:00Z&sig={r(43, B64)}%3D"),
        ("Shopify access token", f"shop admin token shpat_{r(32, HEX)}"),
        ("Shopify shared secret", f"app secret shpss_{r(32, HEX)}"),
        ("Atlassian API token", f"jira token ATATT3xFfGF0{r(180, URLSAFE)}={r(8, UPPER)}"),
        ("Docker Hub token", f"docker login -p dckr_pat_{r(27, URLSAFE)}"),
        ("Vault token", f"VAULT_TOKEN=hvs.{r(90, URLSAFE)}"),
        ("Terraform Cloud token", f"token = \"{r(14)}.atlasv1.{r(67)}\""),
        ("DigitalOcean token", f"doctl auth init -t dop_v1_{r(64, HEX)}"),
        ("Doppler token", f"DOPPLER_TOKEN=dp.pt.{r(43)}"),
        ("Databricks token", f"databricks token dapi{r(32, HEX)}"),
        ("Hugging Face token", f"HF_TOKEN=hf_{r(34, string.ascii_letters)}"),
        ("Linear API key", f"linear key lin_api_{r(40)}"),
        ("Notion token", f"the integration secret is ntn_{r(46)}"),
        ("Postman API key", f"postman PMAK-{r(24, HEX)}-{r(34, HEX)}"),
        ("Pulumi token", f"PULUMI_ACCESS_TOKEN=pul-{r(40, HEX)}"),
        ("Sentry user token", f"sentry-cli uses sntryu_{r(64, HEX)}"),
        ("Grafana service account token", f"grafana token glsa_{r(32)}_{r(8, HEX)}"),
        ("New Relic user key", f"NEW_RELIC_API_KEY=NRAK-{r(27, UPPER)}"),
        ("Alibaba access key", f"aliyun key LTAI{r(20)}"),
        ("age secret key", f"AGE-SECRET-KEY-1{r(58, 'QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L')}"),
        ("password assignment", f'password = "{r(14)}"'),
        ("unquoted password", f"db_password={r(16)}"),
        ("secret key assignment", f'SECRET_KEY = "{r(50, ALNUM + "!@#$%^&*(-_=+)")}"'),
        ("API key in YAML", f"api_key: {r(32)}"),
        ("bearer header", f"Authorization: Bearer {r(40, URLSAFE)}"),
        ("basic auth header", "Authorization: Basic "
                              + base64.b64encode(f"admin:{r(12)}".encode()).decode()),
        ("Okta token header", f"Authorization: SSWS 00{r(40, URLSAFE)}"),
        ("Square access token", f"square token EAAA{r(60, URLSAFE)}"),
        ("Square OAuth secret", f"sq0csp-{r(43, URLSAFE)}"),
        ("Twitter bearer token", f"TWITTER_BEARER=AAAAAAAAAAAAAAAAAAAAA{r(80, ALNUM + '%')}"),
        ("Facebook access token", f"fb token EAACEdEose0cBA{r(40)}"),
        ("Dropbox token", f"dropbox access token sl.{r(130, URLSAFE)}"),
        ("Figma token", f"figma figd_{r(40, URLSAFE)}"),
        ("Supabase token", f"SUPABASE_ACCESS_TOKEN=sbp_{r(40, HEX)}"),
        ("PlanetScale token", f"pscale_tkn_{r(43, URLSAFE)}"),
        ("Fly.io token", f"FLY_API_TOKEN=fo1_{r(43, URLSAFE)}"),
        ("RubyGems key", f"gem push with rubygems_{r(48, HEX)}"),
        ("Brevo key", f"smtp key xkeysib-{r(64, HEX)}-{r(16)}"),
        ("Buildkite token", f"buildkite bkua_{r(40, HEX)}"),
        ("Prefect key", f"PREFECT_API_KEY=pnu_{r(36)}"),
        ("Dynatrace token", f"dt0c01.{r(24, UPPER)}.{r(64, UPPER)}"),
        ("Adafruit IO key", f"aio_{r(28)} is the feed key"),
        ("Mapbox secret token", f"mapbox sk.eyJ1Ijoi{r(40, URLSAFE)}.{r(22, URLSAFE)}"),
        ("Heroku API key", f"HEROKU_API_KEY={uuid.UUID(int=rng.getrandbits(128))}"),
        ("Datadog API key", f"DD_API_KEY={r(32, HEX)}"),
        ("webhook secret in prose", f"the webhook secret is {rng.randbytes(24).hex()}"),
        ("signing secret in prose", f"the signing secret is {r(40, B64)}"),
        ("1Password service token", f"OP_SERVICE_ACCOUNT_TOKEN=ops_{_jwt(rng)}"),
        ("GCP service account key", '"private_key": "-----BEGIN PRIVATE KEY-----\\nMIIEv'
                                    f'{r(60, B64)}\\n-----END PRIVATE KEY-----\\n"'),
        ("Artifactory key", f"artifactory AKCp{r(69)}"),
        ("Cloudinary URL", f"CLOUDINARY_URL=cloudinary://{r(15, string.digits)}:{r(27, URLSAFE)}"
                           "@acme"),
    ]
    return formats


def _repo_files() -> list[Path]:
    """The package's own source: code and docstrings. The docs are left out, since they
    may quote a placeholder credential to explain what is refused."""
    return [f for f in sorted((REPO / "src").rglob("*.py")) if f.is_file()]


def repository_lines(limit: int = 6000) -> list[tuple[str, str]]:
    """(origin, line) from this repository's source: ``limit`` non-blank lines spread
    evenly over all of them."""
    out: list[tuple[str, str]] = []
    for f in _repo_files():
        for n, line in enumerate(f.read_text(encoding="utf-8").splitlines(), 1):
            if line.strip():
                out.append((f"{f.relative_to(REPO).as_posix()}:{n}", line))
    step = max(1, len(out) // limit)
    return out[::step][:limit]


def git_log_lines(limit: int = 3000) -> list[tuple[str, str]]:
    """(origin, line) of this repository's commit messages; none without git history."""
    try:
        p = subprocess.run(["git", "-C", str(REPO), "log", "-n", "2000", "--format=%H%n%B"],
                           capture_output=True, text=True, timeout=60, check=True)
    except (OSError, subprocess.SubprocessError):
        return []
    out: list[tuple[str, str]] = []
    commit = ""
    for line in p.stdout.splitlines():
        if len(line) == 40 and all(c in HEX for c in line):
            commit = line[:10]
            out.append((f"git {commit}", f"commit {line}"))
        elif line.strip():
            out.append((f"git {commit}", line))
    return out[:limit]


LOG_TEMPLATES = (
    "{ts} INFO  deploy: rolled out ghcr.io/acme/api@sha256:{h64} to prod-eu-1",
    "{ts} ERROR http: GET /v1/orders/{uuid} 500 in {ms}ms trace_id={h32} span_id={h16}",
    "{ts} WARN  db: slow query ({ms} ms) request_id={uuid}",
    "Merge pull request #{n} from acme/fix-{word} ({h7})",
    "commit {h40}",
    "Revert \"{word} the cache\" This reverts commit {h40}.",
    '    "integrity": "sha512-{b88}",',
    '  resolved "https://registry.yarnpkg.com/{word}/-/{word}-1.{n}.0.tgz#{h40}"',
    "{word}@1.{n}.0: integrity sha1-{b28}",
    "Digest: sha256:{h64}",
    "Status: Downloaded newer image for acme/{word}@sha256:{h64}",
    "oid sha256:{h64}",
    "ETag: \"{h32}\"",
    "x-amz-request-id: {H16} x-amz-id-2: {b76}",
    "traceparent: 00-{h32}-{h16}-01",
    "{ts} connection from {ip}:{port} closed after {ms} ms",
    "{ts} kubelet: Pulling image \"registry.k8s.io/{word}:v1.{n}.0\" (pod {word}-{h10}-{l5})",
    "md5sum {h32}  {word}.tar.gz",
    "sha256sum {h64}  {word}-1.{n}.0.tar.gz",
    "  File \"/srv/app/{word}.py\", line {n}, in {word}",
    "job {uuid} finished: {n} rows, checksum {h40}",
    "{ts} nginx: {ip} - - \"GET /static/{word}.{h8}.js HTTP/1.1\" 200 {n}",
    "Fixes #{n}: the {word} retry loop no longer spins (see {h12})",
    "cherry-picked from {h40} onto release/1.{n}",
    "git checkout -b fix/{word}-{n} origin/main && git reset --hard {h40}",
    "Bumped {word} from 1.{n}.0 to 1.{n}.1 (lockfile hash {h64})",
    "wheel: {word}-1.{n}.0-py3-none-any.whl sha256={b43}",
    "{ts} celery: Task tasks.{word}[{uuid}] succeeded in 0.{ms}s",
    "the password is kept in 1Password under 'staging db'; ask ops for access",
    "rotate the API key every 90 days (see docs/security.md); never paste it here",
    "set SEDIMENT_TOKEN from the vault, e.g. export SEDIMENT_TOKEN=$(vault read -field=token x)",
    "password = os.environ[\"DB_PASSWORD\"]",
    "token = secrets.token_urlsafe(32)",
    "api_key: ${{API_KEY}}",
    "Authorization: Bearer <token>",
    "postgresql://app@db.internal:5432/app?sslmode=require",
    "{ts} sshd: Accepted publickey for deploy from {ip} port {port} ssh2: ED25519 SHA256:{b43}",
    "{ts} systemd: Started session {n} of user {word}.",
    "cache key {word}:{h16}:{n} evicted",
    "Object {h40} is a blob of {n} bytes",
    "{ts} s3: PUT s3://acme-{word}/{uuid}.parquet ({n} bytes, etag {h32})",
)


def log_lines(count: int = 2000, seed: int = 10) -> list[tuple[str, str]]:
    """(origin, line) of generated logs, commit messages and lockfile lines."""
    rng = random.Random(seed)
    words = ["cache", "orders", "billing", "auth", "search", "ingest", "worker", "export",
             "router", "metrics", "session", "upload", "queue", "index", "parser"]
    out: list[tuple[str, str]] = []
    for i in range(count):
        t = LOG_TEMPLATES[i % len(LOG_TEMPLATES)]
        ip = ".".join(str(rng.randint(1, 254)) for _ in range(4))
        line = t.format(
            ts=f"2026-11-{rng.randint(1, 28):02d}T{rng.randint(0, 23):02d}:"
               f"{rng.randint(0, 59):02d}:{rng.randint(0, 59):02d}.{rng.randint(0, 999):03d}Z",
            h7=_r(rng, 7, HEX), h8=_r(rng, 8, HEX), h10=_r(rng, 10, HEX),
            h12=_r(rng, 12, HEX), h16=_r(rng, 16, HEX), H16=_r(rng, 16, UPPER),
            h32=_r(rng, 32, HEX), h40=_r(rng, 40, HEX), h64=_r(rng, 64, HEX),
            b28=base64.b64encode(rng.randbytes(20)).decode(),
            b43=base64.b64encode(rng.randbytes(32)).decode().rstrip("="),
            b76=base64.b64encode(rng.randbytes(57)).decode(),
            b88=base64.b64encode(rng.randbytes(64)).decode(),
            uuid=uuid.UUID(int=rng.getrandbits(128), version=4), ip=ip,
            port=rng.randint(1024, 65535), ms=rng.randint(1, 9999), n=rng.randint(1, 9999),
            word=rng.choice(words), l5=_r(rng, 5, string.ascii_lowercase))
        out.append((f"log {i % len(LOG_TEMPLATES)}", line))
    return out


def ordinary_lines() -> list[tuple[str, str]]:
    """Everything that must be accepted: repository lines, git log, generated logs."""
    return [*repository_lines(), *git_log_lines(), *log_lines()]
