"""Password hashes: scrypt from the standard library, with the scheme stored beside each hash so
older hashes are recognised and upgraded at the user's next sign-in.

scrypt with N=2**14, r=8, p=1 (16 MiB, about 55 ms here) is what Django's ScryptPasswordHasher
uses; the PBKDF2-SHA256 hashes of 120,000 iterations written before it are below current
guidance (OWASP: 600,000) and are replaced when their owner next signs in.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from functools import lru_cache

from ...errors import DatabaseError

CURRENT = "scrypt:16384:8:1"
LEGACY = "pbkdf2-sha256:120000"


def hash_password(password: str) -> tuple[str, bytes, bytes]:
    """(scheme, salt, digest) of a new hash in the current scheme."""
    salt = secrets.token_bytes(16)
    return CURRENT, salt, _derive(CURRENT, password, salt)


def verify_password(password: str, scheme: str, salt: bytes, digest: bytes) -> bool:
    """Whether `password` is the one hashed; constant-time in the comparison."""
    return hmac.compare_digest(_derive(scheme, password, salt), digest)


def burn_time(password: str) -> None:
    """The work of one verification, for a user that does not exist: both answers take as long."""
    scheme, salt, digest = _decoy()
    verify_password(password, scheme, salt, digest)


def is_current(scheme: str) -> bool:
    return scheme == CURRENT


def _derive(scheme: str, password: str, salt: bytes) -> bytes:
    name, *numbers = scheme.split(":")
    secret = password.encode("utf-8", "surrogatepass")
    if name == "scrypt":
        n, r, p = (int(x) for x in numbers)
        return hashlib.scrypt(secret, salt=salt, n=n, r=r, p=p, maxmem=256 * n * r * p, dklen=32)
    if name == "pbkdf2-sha256":
        return hashlib.pbkdf2_hmac("sha256", secret, salt, int(numbers[0]))
    raise DatabaseError(f"A password is stored with an unknown hash scheme {scheme!r}.")


@lru_cache(maxsize=1)
def _decoy() -> tuple[str, bytes, bytes]:
    return hash_password(secrets.token_urlsafe(16))
