"""Actors and their bearer tokens: minted once, stored hashed, checked in constant time."""

from sediment.auth.tokens import ROLES, Principal, TokenInfo, TokenStore

__all__ = ["ROLES", "Principal", "TokenInfo", "TokenStore"]
