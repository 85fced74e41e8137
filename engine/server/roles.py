"""Roles that clients add, kept in bounds (capped, dropped when idle), and OpenAI's voice
names as aliases of voices (they voice a line; they never add a role)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping

from engine.core.errors import CastError
from engine.core.types import RoleKey

DEFAULT_ALIASES: dict[str, str] = {
    "alloy": "en-us+f3", "ash": "en-us+m3", "ballad": "en-gb+m5", "cedar": "en-us+m2",
    "coral": "en-us+f2", "echo": "en-us+m1", "fable": "en-gb+m2", "marin": "en-us+f1",
    "nova": "en-us+f4", "onyx": "en-us+m7", "sage": "en-gb+f1", "shimmer": "en-us+f5",
    "verse": "en-gb+m4",
}  # fmt: skip
"""OpenAI's voice names -> embedded espeak-ng voices of a like register (female voices to
female variants); `serve --voice-alias NAME=VOICE` replaces any of them."""


class TooManyRoles(CastError):
    """Clients have added as many roles as the server allows (answered 429, Retry-After:
    when the least recently used client role goes idle and its place frees)."""

    retry_after_s = 60.0


class ClientRoles:
    """The roles clients added and when each was last used (any thread)."""

    def __init__(self, cap: int, idle_s: float, clock: Callable[[], float]) -> None:
        self.cap = cap
        self.idle_s = idle_s
        self.clock = clock
        self._last_used: dict[RoleKey, float] = {}
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._last_used)

    def __contains__(self, key: object) -> bool:
        return key in self._last_used

    def admit(self, key: RoleKey) -> None:
        """Count a new client role; `TooManyRoles` when the cap is reached (idle roles
        are dropped first, by `expire` on the engine loop)."""
        with self._lock:
            if key not in self._last_used and len(self._last_used) >= self.cap:
                refusal = TooManyRoles(
                    f"clients have added {self.cap} roles, the most this server keeps; a role unused "
                    f"for {self.idle_s:g} s is dropped (serve --max-client-roles, --client-role-idle)"
                )
                oldest = min(self._last_used.values(), default=self.clock())
                refusal.retry_after_s = max(1.0, oldest + self.idle_s - self.clock())
                raise refusal
            self._last_used[key] = self.clock()

    def touch(self, key: RoleKey) -> None:
        with self._lock:
            if key in self._last_used:
                self._last_used[key] = self.clock()

    def expire(self) -> list[RoleKey]:
        """Forget and return the roles unused for longer than the idle time."""
        cutoff = self.clock() - self.idle_s
        with self._lock:
            gone = [k for k, t in self._last_used.items() if t < cutoff]
            for k in gone:
                del self._last_used[k]
        return gone

    def forget(self, key: RoleKey) -> None:
        with self._lock:
            self._last_used.pop(key, None)


def aliases(overrides: Mapping[str, str], check: Callable[[str], str]) -> dict[str, str]:
    """The alias table: defaults with `overrides`, every target checked (`CastError` names
    the alias whose voice does not exist here)."""
    table = {**DEFAULT_ALIASES, **{k.strip().lower(): v for k, v in overrides.items()}}
    out = {}
    for name, target in table.items():
        try:
            out[name] = check(target)
        except CastError as exc:
            raise CastError(f"voice alias {name}={target}: {exc}") from None
    return out
