"""Credential detection measured on labelled sets (issue 26, item 10): at least 60
credential formats that must be refused, at least 2,000 lines of ordinary code, logs and
commit messages that must be accepted (``bench.credential_corpus``; the rates, with the
command that prints them, are in docs/security.md)."""

from __future__ import annotations

import pytest
from bench.credential_corpus import credential_samples, ordinary_lines

from sediment.credentials import find_credentials, refuse_credentials
from sediment.errors import ValidationError

SAMPLES = credential_samples()


def test_the_sets_are_large_enough() -> None:
    assert len({name for name, _ in SAMPLES}) >= 60
    assert len(ordinary_lines()) >= 2000


@pytest.mark.parametrize(("name", "text"), SAMPLES, ids=[n for n, _ in SAMPLES])
def test_every_credential_format_is_refused(name: str, text: str) -> None:
    with pytest.raises(ValidationError) as err:
        refuse_credentials(text, "content")
    secret = max(text.split(), key=len)[-12:]
    assert secret not in str(err.value), "the refusal must not echo the secret"


def test_no_ordinary_line_is_refused() -> None:
    lines = ordinary_lines()
    refused = [(origin, line, [f.type for f in found]) for origin, line in lines
               if (found := find_credentials(line))]
    rate = len(refused) / len(lines)
    assert refused == [], f"{len(refused)} of {len(lines)} refused ({rate:.2%})"


@pytest.mark.parametrize("text", [
    "Fixed in 3f33ca9d1e5b2c8a7f0e4d6b9a1c2e3f4a5b6c7d; see the release notes",
    "image ghcr.io/acme/api@sha256:"
    "4c1e5b7a9d2f3e8c6b0a1d4f7e2c9b8a5d3f6e1c0b7a4d9e2f5c8b1a6d3e0f7c",
    "trace 4bf92f3577b34da6a3ce929d0e0e4736 span 00f067aa0ba902b7",
    '"integrity": "sha512-Ke8nkiZp6M2kMvLSn7HCG2mhBQuMHfLJfOZwXh/Nj7SVM7y68x/ENx6eBNtjUuK0yTcUHL'
    'nGQJHJvE1KAxQ4xQ=="',
    "request 123e4567-e89b-12d3-a456-426614174000 from 8.8.8.8 failed",
    "the key is in the vault under payments/stripe; ask ops for it",
])
def test_the_engineering_text_of_the_issue_is_accepted(text: str) -> None:
    assert find_credentials(text) == []


def test_a_secret_word_still_makes_hex_a_secret() -> None:
    assert find_credentials("commit 9f2b7c1d4e8a6f3b5c0d2e7a9b1c4f6e8d0a3b5c") == []
    assert find_credentials("the webhook secret is 9f2b7c1d4e8a6f3b5c0d2e7a9b1c4f6e8d0a3b5c")
