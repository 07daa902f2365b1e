"""Refusing what an agent must not store: credentials in any field it writes, and values a
strict JSON reader would reject (``fields``)."""

from sediment.credentials.detect import Finding, find_credentials, refuse_credentials
from sediment.credentials.fields import (
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    check_metadata,
    check_number,
    check_text,
    check_texts,
)

__all__ = ["MAX_METADATA_BYTES", "MAX_METADATA_DEPTH", "Finding", "check_metadata",
           "check_number", "check_text", "check_texts", "find_credentials",
           "refuse_credentials"]
