"""Refusing credentials on the write paths: memories and ``agents_context_write``."""

from sediment.credentials.detect import Finding, find_credentials, refuse_credentials

__all__ = ["Finding", "find_credentials", "refuse_credentials"]
