"""A streamed answer voiced as its client takes it. Queuing every chunk of a long answer at
once holds all of its audio on the server until the client has read it: a client that
stops reading (or reads slowly) costs its whole answer in memory. A paced answer queues at
most `ahead` chunks beyond the one being sent, so what a stalled reader holds here is
bounded by about `ahead - 1` chunks of audio (a chunk is at most
`engine.synthesis.text.MAX_CHUNK_CHARS` characters: about 8 s, 1.5 MB at 48 kHz float) and
the piece in the connection's write buffer; a reader stalled past the send timeout is cut
off (`limits.GuardedH11`), which withdraws the rest."""

from __future__ import annotations

from collections import deque
from concurrent.futures import Future

from engine.core.errors import TroupeError
from engine.core.types import Voice
from engine.scheduler import RequestClass
from engine.scheduler.request import Clock
from engine.server.speech import Pending, SpeechService, cancel
from engine.synthesis.base import Mono


class Paced:
    """A request's chunks, queued as they are taken: taking chunk j queues up to chunk
    j + ahead - 1, each due (k - j + 1) budgets from then. `ahead` 0: every chunk at once
    (chunk k due k + 1 budgets from the start, as a whole answer)."""

    def __init__(self, pending: list[Pending], clock: Clock, budget_s: float, ahead: int) -> None:
        self._pending = pending
        self._clock = clock
        self._budget_s = budget_s
        self.ahead = ahead if ahead > 0 else len(pending)
        self._queued: deque[Future[Mono]] = deque()
        self._next = 0
        """The next chunk to queue."""
        self._taken = 0
        """Chunks handed to the stream."""

    def __len__(self) -> int:
        return len(self._pending)

    def start(self) -> None:
        """Queue the first chunks, all or nothing (an admission refusal raises here, before
        any answer is sent)."""
        self._fill()

    def take(self) -> Future[Mono] | None:
        """The next chunk's future (the caller awaits it and cancels it if it leaves), after
        queuing the chunks that now fall within `ahead`; None after the last."""
        if self._taken >= len(self._pending):
            return None
        self._fill()
        self._taken += 1
        return self._queued.popleft()

    def _fill(self) -> None:
        now = self._clock()
        j = self._taken
        added: list[Future[Mono]] = []
        try:
            while self._next < min(len(self._pending), j + self.ahead):
                k = self._next
                added.append(self._pending[k](now + self._budget_s * (k - j + 1)))
                self._pending[k] = _taken  # the chunk's text and voice are not needed again
                self._next += 1
        except TroupeError:
            cancel(added)
            raise
        self._queued.extend(added)

    def cancel(self) -> None:
        """Withdraw every chunk queued and not yet taken, and queue no more."""
        cancel(self._queued)
        self._queued.clear()
        self._next = self._taken = len(self._pending)


def _taken(deadline_s: float) -> Future[Mono]:
    raise AssertionError("a chunk is queued once")


def paced(service: SpeechService, role: str, text: str, speed: float, klass: RequestClass,
          voice: Voice | None = None) -> Paced:  # fmt: skip
    """`text` for `role` as a paced stream (`SpeechSettings.stream_ahead` chunks ahead of the
    one being sent), its first chunks queued."""
    speech = Paced(service.plan(role, text, speed, klass, voice), service.clock, service.settings.budget_s,
                   service.settings.stream_ahead)  # fmt: skip
    speech.start()
    return speech
