"""What the server hands each server plugin: its database, the sign-in system, the platform,
the plugin records."""

from __future__ import annotations

from dataclasses import dataclass

from ...platform import PluginPlatform
from ..auth.sessions import Auth
from ..database import Database
from .records import PluginRecords


@dataclass(frozen=True)
class ServerContext:
    """A server plugin's `setup(context, seed=...)` and `routes(context)` receive this."""

    database: Database
    auth: Auth
    platform: PluginPlatform
    records: PluginRecords
