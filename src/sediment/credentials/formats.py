"""Credential formats detect-secrets does not know, and engineering text that only looks
like one.

``FORMATS`` are vendors' documented token shapes: a fixed prefix (``glpat-``, ``sk_test_``,
``hvs.``, ``dop_v1_``...) followed by a run of the vendor's alphabet at least as long as the
real tokens, anchored at a word boundary, so a prefix alone in prose (``the sk- keys``) is
not one. ``BENIGN`` are the digests and integrity strings engineers paste every day (an
image's ``sha256:...``, npm's ``sha512-...``, an SSH key's ``SHA256:...`` fingerprint, a
``data:`` URI): they are masked before the entropy check, which would otherwise take them
for keys. ``CREDENTIAL_WORD`` is what must precede a bare hex string for it to count as a
secret: a 40-hex commit SHA or a 32-hex trace id on its own is not one.
"""

from __future__ import annotations

import re

__all__ = ["BENIGN", "CREDENTIAL_WORD", "FORMATS"]

_B = r"(?<![A-Za-z0-9_-])"
_E = r"(?![A-Za-z0-9_-])"
_BECH32 = "QPZRY9X8GF2TVDW0" "S3JN54KHCE6MUA7L"  # in two, or it reads as a key itself

FORMATS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern)) for name, pattern in (
        ("a GitHub token", _B + r"github_pat_[A-Za-z0-9]{22}_[A-Za-z0-9]{59}" + _E),
        ("a GitLab token", _B + r"gl(?:pat|dt|rt|cbt|ptt|ft|imt|oas|soat)-[A-Za-z0-9_-]{20,}"),
        ("a Stripe key", _B + r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{20,}" + _E),
        ("a Stripe webhook secret", _B + r"whsec_[A-Za-z0-9+/=]{32,}"),
        ("an OpenAI key", _B + r"sk-(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}"),
        ("an Anthropic key", _B + r"sk-ant-(?:api|admin)\d\d-[A-Za-z0-9_-]{80,}"),
        ("a Google API key", _B + r"AIza[A-Za-z0-9_-]{35}" + _E),
        ("a Google OAuth secret", _B + r"GOCSPX-[A-Za-z0-9_-]{28}" + _E),
        ("a Google OAuth token", _B + r"ya29\.[A-Za-z0-9_-]{50,}"),
        ("a Mailgun key", _B + r"key-[0-9a-f]{32}" + _E),
        ("an npm token", _B + r"npm_[A-Za-z0-9]{36}" + _E),
        ("a Slack app token", _B + r"xapp-\d-[A-Z0-9]+-\d+-[a-z0-9]{32,}"),
        ("a Slack webhook", r"hooks\.slack\.com/(?:services|workflows)/T[A-Z0-9]+/[A-Z0-9]+/"
                            r"[A-Za-z0-9]{16,}"),
        ("a Shopify token", _B + r"shp(?:at|ss|ca|pa)_[0-9a-fA-F]{32}" + _E),
        ("an Atlassian token", _B + r"ATATT3[A-Za-z0-9_=-]{100,}"),
        ("a Docker Hub token", _B + r"dckr_pat_[A-Za-z0-9_-]{27,}"),
        ("a Vault token", _B + r"hv[sbr]\.[A-Za-z0-9_-]{24,}"),
        ("a Terraform Cloud token", r"[A-Za-z0-9]{14}\.atlasv1\.[A-Za-z0-9_=-]{60,}"),
        ("a DigitalOcean token", _B + r"do[por]_v1_[0-9a-f]{64}" + _E),
        ("a Doppler token", _B + r"dp\.(?:pt|st|sa|ct|scim|audit)\.[A-Za-z0-9]{40,}"),
        ("a Databricks token", _B + r"dapi[0-9a-f]{32}(?:-\d)?" + _E),
        ("a Hugging Face token", _B + r"hf_[A-Za-z]{34}" + _E),
        ("a Linear key", _B + r"lin_(?:api|oauth)_[A-Za-z0-9]{40}" + _E),
        ("a Notion token", _B + r"(?:ntn_[A-Za-z0-9]{40,}|secret_[A-Za-z0-9]{43})" + _E),
        ("a Postman key", _B + r"PMAK-[0-9a-f]{24}-[0-9a-f]{34}" + _E),
        ("a Pulumi token", _B + r"pul-[0-9a-f]{40}" + _E),
        ("a Sentry token", _B + r"sntry[su]_[A-Za-z0-9+/=_]{40,}"),
        ("a Grafana token", _B + r"(?:glsa_[A-Za-z0-9]{32}_[0-9a-f]{8}|glc_[A-Za-z0-9+/=]{32,})"),
        ("a New Relic key", _B + r"NR(?:AK|II|JS|RA)-[A-Z0-9]{27}" + _E),
        ("an Alibaba key", _B + r"LTAI[A-Za-z0-9]{12,20}" + _E),
        ("an age identity", r"AGE-SECRET-KEY-1[" + _BECH32 + r"]{58}"),
        ("an authorization header", r"(?i)\bauthorization\s*[:=]\s*\"?(?:bearer|basic|token|ssws|"
                                    r"digest)\s+[A-Za-z0-9._~+/=-]{16,}"),
        ("a Square token", _B + r"(?:EAAA[A-Za-z0-9_-]{60}|sq0(?:atp|csp)-[A-Za-z0-9_-]{22,})"),
        ("a Twitter token", _B + r"A{20,}[A-Za-z0-9%]{30,}"),
        ("a Facebook token", _B + r"EAACEdEose0cBA[A-Za-z0-9]{20,}"),
        ("a Dropbox token", _B + r"sl\.[A-Za-z0-9_-]{120,}"),
        ("a Figma token", _B + r"figd_[A-Za-z0-9_-]{40}"),
        ("a Supabase token", _B + r"sbp_[0-9a-f]{40}" + _E),
        ("a PlanetScale token", _B + r"pscale_(?:tkn|pw|oauth)_[A-Za-z0-9_=.-]{32,}"),
        ("a Fly.io token", _B + r"fo1_[A-Za-z0-9_-]{43}"),
        ("a RubyGems key", _B + r"rubygems_[0-9a-f]{48}" + _E),
        ("a Brevo key", _B + r"xkeysib-[0-9a-f]{64}-[A-Za-z0-9]{16}" + _E),
        ("a Buildkite token", _B + r"bkua_[0-9a-f]{40}" + _E),
        ("a Prefect key", _B + r"pnu_[A-Za-z0-9]{36}" + _E),
        ("a Dynatrace token", _B + r"dt0c01\.[A-Z0-9]{24}\.[A-Z0-9]{64}" + _E),
        ("an Adafruit key", _B + r"aio_[A-Za-z0-9]{28}" + _E),
        ("a Mapbox token", _B + r"sk\.eyJ[A-Za-z0-9_-]{30,}\.[A-Za-z0-9_-]{20,}"),
        ("a 1Password token", _B + r"ops_eyJ[A-Za-z0-9_.-]{50,}"),
        ("a Twilio key", _B + r"SK[0-9a-fA-F]{32}" + _E),
        ("an Azure SAS token", r"[?&]sig=[A-Za-z0-9%+/=]{40,}"),
        ("a URL with a password", r"(?i)\b[a-z][a-z0-9+.-]*://[^\s:/@]*:(?![$<{%*])"
                                  r"(?!(?:password|passwd|secret|changeme|example|x{3,})@)(?![^\s/@]*[\[\]])"
                                  r"[^\s/@]{6,}@[^\s/@]+"),
    )
)
"""(what it is, pattern): refused wherever they occur in a line."""

BENIGN = re.compile(
    r"(?i)(?:\b(?:sha(?:1|224|256|384|512)|md5|blake2[bs]?(?:-\d+)?)[-:=]"
    r"[A-Za-z0-9+/_-]{16,}={0,2})"
    r"|(?:\bdata:[a-z]+/[a-z0-9.+-]+;base64,[A-Za-z0-9+/]+=*)"
)
"""Digests, integrity strings and data URIs: masked before the entropy check."""

CREDENTIAL_WORD = re.compile(
    r"(?i)(?:secret|passw(?:or)?d|\bpwd|token|api[ _-]?key|apikey|private[ _-]?key|"
    r"access[ _-]?key|client[ _-]?key|signing[ _-]?key|credential|auth[ _-]?key|"
    r"bearer|session[ _-]?key)"
)
"""A word that makes the bare hex string after it a secret (``webhook secret 4f3a...``)."""
