"""Bearer tokens in the team server's database (the file token model, in table ``tokens``).

The same tokens as :class:`sediment.auth.TokenStore` (``sdm_<id>_<secret>``, shown once,
only a salted HMAC kept, an optional end time), so a client cannot tell which store minted
its token. A token may be scoped to one project: a server of another project takes it for
an unknown token. A server over a database always requires a token
(:meth:`PgTokenStore.any` is true): a shared store has no anonymous caller. Revoking
deletes the row, and every request looks its token up again, so a revoked token stops
working at once, on every server process.
"""

from __future__ import annotations

import secrets
import time

import psycopg

from sediment.auth.tokens import Principal, TokenInfo, check_grant, matches, mint, token_id
from sediment.errors import NotFoundError
from sediment.pg.database import Database, row, rows


class PgTokenStore:
    def __init__(self, database: Database) -> None:
        self.db = database

    def any(self) -> bool:
        return True

    def list(self) -> list[TokenInfo]:
        with self.db.connection() as conn:
            got = rows(conn, "SELECT id, actor, role, created_at_ms, expires_at_ms, project "
                             "FROM tokens ORDER BY created_at_ms, id")
        return [_info(r) for r in got]

    def create(self, actor: str, role: str, expires_at_ms: int | None = None, *,
               created_by: str = "", project: str | None = None) -> tuple[str, TokenInfo]:
        """Mint a token for ``actor``, valid until ``expires_at_ms`` (None: until revoked)
        and for ``project`` only (None: every project); return it (shown once) and its
        record."""
        check_grant(actor, role)
        while True:
            tid = secrets.token_hex(4)
            token, salt, digest = mint(tid)
            info = TokenInfo(tid, actor, role, int(time.time() * 1000), expires_at_ms,
                             project)
            try:
                with self.db.transaction() as conn:
                    conn.execute(
                        "INSERT INTO tokens (id, actor, role, salt, hmac, created_at_ms, "
                        "created_by, expires_at_ms, project) "
                        "VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s)",
                        (tid, actor, role, salt, digest, info.created_at_ms, created_by,
                         expires_at_ms, project))
            except psycopg.errors.UniqueViolation:
                continue
            return token, info

    def revoke(self, token_id: str) -> TokenInfo:
        with self.db.transaction() as conn:
            got = row(conn, "DELETE FROM tokens WHERE id = %s RETURNING id, actor, role, "
                            "created_at_ms, expires_at_ms, project", (token_id,))
        if got is None:
            raise NotFoundError(f"no token with id {token_id!r} (see sediment token list)")
        return _info(got)

    def verify(self, token: str) -> Principal | None:
        """The principal a presented token stands for, or None; a store that cannot be
        reached raises StoreUnavailableError (the caller answers 503, not 401). A token
        scoped to another project than this server's is None."""
        tid = token_id(token)
        if tid is None:
            return None
        with self.db.connection() as conn:
            got = row(conn, "SELECT actor, role, salt, hmac, expires_at_ms, project FROM tokens "
                            "WHERE id = %s", (tid,))
        if got is None or not matches(token, bytes(got[2]), str(got[3])):
            return None
        if got[4] is not None and time.time() * 1000 >= int(got[4]):
            return None
        if got[5] is not None and got[5] != self.db.project:
            return None
        return Principal(str(got[0]), str(got[1]))


def _info(r: tuple[str, str, str, int, int | None, str | None]) -> TokenInfo:
    return TokenInfo(str(r[0]), str(r[1]), str(r[2]), int(r[3]),
                     None if r[4] is None else int(r[4]), None if r[5] is None else str(r[5]))
