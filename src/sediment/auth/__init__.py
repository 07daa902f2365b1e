"""Actors and their bearer tokens: minted once, stored hashed, checked in constant time;
and what each token's role may do (``roles``)."""

from sediment.auth.roles import ROLES, Permission, allowed, tool_permission
from sediment.auth.tokens import Principal, TokenInfo, TokenStore

__all__ = ["ROLES", "Permission", "Principal", "TokenInfo", "TokenStore", "allowed",
           "tool_permission"]
