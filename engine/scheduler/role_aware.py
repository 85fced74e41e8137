"""The role-aware policy: the director's weights, deadlines, ageing and admission control.

Order (a decision costs O(log n) at any depth; keys do not change with time):
- ad-libs first (FIFO among them);
- then the current speaker's next lines inside the continuity window, then the role
  ranked first by `weight * class_factor + age_rate * age` (its earliest line), but only
  while that keeps every queued line on time; otherwise the earliest that can still be
  (EDF). "On time" is the line's deadline or, for a request a client waits on, sooner:
  `fifo_tolerance` (35%) past the wait arrival order would have given it, and for the
  lead's (the highest weight's) requests `lead_fifo_share` (30%) of it, so that the due
  order itself puts the lead ahead when there is no slack to spare. The weights take the
  lead ahead while the others can spare it, never by deferring a client's request up to
  its deadline when FIFO would have answered it in a fraction of that. When the queued
  deadlines cannot all be met whatever the order (overload), the lowest weights are
  deferred until the rest can (see `refresh`); while they can all be met, none is given
  up for the weights or the due times (but the lead's client requests may make another
  client's late; a show's cue, never). The age term is additive, so a weight-1
  role under a flood of weight-10 work is served once it has waited (10 - 1) / age_rate
  seconds longer than them: nothing starves.
  `weight + age_rate * (now - t_enqueued)` ranks like `weight - age_rate * t_enqueued`,
  a key fixed at arrival (the `now` term is common to all).

Overload (requests with a finite `give_up_s`, i.e. a client is waiting):
- admission: a request is refused up front when the work queued at its weight or above
  would not let it finish by `deadline + give_up_s` (the caller answers 503 with the
  returned wait as Retry-After). A lead is admitted where a minor role is refused.
- shedding: an admitted request that can no longer finish by that moment (higher-weight
  work arrived after it) is shed at the next tick, so no admitted request waits without
  bound and no backend time goes to audio nobody will hear.
"""

from __future__ import annotations

import bisect
import heapq
import itertools
import math
from collections import deque
from collections.abc import Callable, Iterable, Iterator, Mapping

from engine.scheduler.cost_index import CostIndex
from engine.scheduler.policy import LOOKAHEAD, Accept, Entries, PolicyConfig, Slot
from engine.scheduler.request import CLASS_FACTOR, Request, RequestClass
from engine.scheduler.urgency import urgency

_Entry = tuple[float, int, Slot]
_Judged = tuple[float, int, _Entry, float, float, bool]
"""A scanned line as the deadline passes read it: (deadline, seq, entry, cost, latency less
cost, a show's line). The passes read these, built in the scan, instead of each going back
to the request (a scan is memory-bound: a server's queued requests are cold in the cache)."""
_NOT_DUE = object()
"""`_take`'s `urgent` for a decision outside the due order (an ad-lib, a batch-mate)."""


class RoleAwarePolicy:
    """Ad-libs first; otherwise the best request by weight, age and continuity, as long as
    serving it leaves every queued deadline feasible (slack stealing); when it would not,
    the earliest deadline that can still be met goes first.

    The deadline order is a sorted list, keyed by when each line is due (`_due`: its
    deadline, or its tolerated FIFO wait when sooner). The system's slack, min over queued
    lines of (due - now - estimated work due before it), is computed by a scan of up to
    `scan_limit` deadlines by the scheduler at most every `refresh_s` (`refresh`), and kept up to date in
    between in O(1) (conservatively: it is only ever lowered by arrivals and by out-of-order
    picks), so a decision never scans. `pop` refreshes by itself only when no tick has for
    `stale_s` (a caller without a tick loop, such as a test).
    """

    name = "role_aware"
    scan_limit = 2048
    stale_s = 0.25

    def __init__(self, config: PolicyConfig | None = None, weights: Mapping[str, float] | None = None):
        self.config = config or PolicyConfig()
        self.weights: dict[str, float] = dict(weights or {})
        self.service_s: Callable[[Request], float] = lambda r: 0.0
        """Estimated backend time a request costs (throughput-based); set by the scheduler."""
        self.latency_s: Callable[[Request], float] = lambda r: 0.0
        """Estimated time from dispatch to its audio (a whole batch, for batched backends)."""
        self.speed: Callable[[], tuple[float, float]] | None = None
        """Where `service_s` and `latency_s` are a backend's speed times a line's spoken
        length (the scheduler's are): that speed, (backend seconds, latency seconds) per
        spoken second, so that a scan renews every estimate without two calls a line."""
        self.last_role: str | None = None
        self.last_deadline_s = 0.0
        self._lead_weight = max(self.weights.values(), default=-math.inf)
        """The highest role weight known: the lead's."""
        self._run = 0
        self._clear()

    def _clear(self) -> None:
        self._e = Entries()
        self._adlib: deque[Slot] = deque()
        self._edf: list[_Entry] = []
        self._lo = 0
        """Where the deadline order's live part starts: the entries before it have left (a
        decision moves this on instead of shifting the whole list; the tick's scan drops them)."""
        self._recent: tuple[deque[tuple[float, float, Slot]], deque[tuple[float, float, Slot]]] = (
            deque(),
            deque(),
        )
        """Client requests in arrival order, the others' and the lead's: (arrival, due before
        its deadline bounds it, slot). A new arrival is due no sooner than the newest of its
        kind still queued."""
        self._held: list[_Entry] = []
        """Client requests the last scan deferred, in due order, out of `_edf` until the next
        scan puts them back in their places and judges them again."""
        self._scan = 0
        """Scans so far: a slot whose `held` is this number was deferred by the last one."""
        self._hard: list[_Entry] = []
        self._hard_i = 0
        self._hard_slack, self._hard_at = float("inf"), -float("inf")
        self._hard_given = self._hard_taken = 0.0
        self._hard_show, self._hard_blocking = math.inf, 0.0
        """Deadlines, not due times: the last scan's lines in deadline order (`_hard`; their
        slots' `crit` is the scan's number, `crit_spare` the least time to spare of the lines
        before them), the least time to spare over all of them (`_hard_slack`), and since the
        scan the work taken in that order (`_hard_given`: the time it takes is no longer work
        ahead of any of them) and out of it (`_hard_taken`: it pushes back each line it went
        ahead of). Due times put a client's request ahead of its deadline; this keeps them
        from pushing another line past its own."""
        self._prio: list[_Entry] = []
        self._by_role: dict[str, list[_Entry]] = {}
        self._expiry: list[_Entry] = []
        self._costs = CostIndex()
        """Queued spoken seconds by effective weight (ad-libs at +inf) and deadline."""
        self._slack, self._slack_at, self._work = float("inf"), -float("inf"), 0.0
        self._due_given = self._due_taken = 0.0
        """Work taken since the last scan at the head of the due order (no longer ahead of any
        line) and out of it (ahead of the lines before it): see `_budget`."""
        self._role_slack: dict[str, float] = {}
        """Each role's least slack at the last scan (as of `_slack_at`)."""

    def _weight(self, r: Request) -> float:
        if r.klass is RequestClass.ADLIB:
            return math.inf
        return self.weights.get(r.role, r.voice.weight) * CLASS_FACTOR[r.klass]

    # --- queueing ------------------------------------------------------------------
    def _estimate(self, r: Request) -> tuple[float, float]:
        cost = self.service_s(r)
        return cost, max(cost, self.latency_s(r))

    def push(self, r: Request) -> None:
        # NB: estimates are taken once per queueing; a reindex (re-weight, seek) renews them
        cost, r.est_latency_s = self._estimate(r)
        r.est_cost_s = cost
        now = r.t_enqueued
        role_weight = self.weights.get(r.role, r.voice.weight)
        unbounded, kind = self._due(r, now, role_weight)
        recent = self._recent[kind] if kind >= 0 else None
        newest = True  # the latest arrival of its kind still queued (not a retry)
        if recent is not None:
            # among requests due alike, arrival order: a queue that drained between two
            # arrivals (a dispatch of several, clients gone) must not put the later one
            # first (under the lead's share, due times crossed whenever the queue shrank
            # faster than 1 / share times the time between). Only against the newest of its
            # kind still queued that came before it (a retry keeps its early place).
            while recent and recent[-1][2].r is None:
                recent.pop()
            while recent and recent[0][2].r is None:
                recent.popleft()
            newest = not recent or recent[-1][0] <= now
            if recent and newest and unbounded < recent[-1][1]:
                unbounded = recent[-1][1]
        due = min(unbounded, r.deadline_s)
        if due - now - cost >= 0:  # deadlines after it lose `cost`; its own slack >= ...
            own = due - now - self._work - cost + (now - self._slack_at)
            self._slack = min(self._slack - cost, own)
            self._work += cost
        slot = self._e.issue(r)
        if recent is not None and newest:
            recent.append((now, unbounded, slot))
        weight = role_weight * CLASS_FACTOR[r.klass]
        slot.weight = math.inf if r.klass is RequestClass.ADLIB else weight
        self._e.charge(slot, cost)
        # NB: the admission index holds spoken seconds, not backend seconds: the backend's
        # speed is applied when admission asks, so a queue built on a first guess (or before
        # the machine got busy) is never counted at that stale speed
        slot.audio_s = r.est_audio_s
        self._costs.add(slot.weight, r.deadline_s, slot.audio_s)
        if r.klass is RequestClass.ADLIB:
            self._adlib.append(slot)
        entry = (due, slot.seq, slot)  # NB: seq is unique: slots are never compared
        edf, lo = self._edf, self._lo
        if lo and (lo == len(edf) or entry < edf[lo]):
            at = self._lo = lo - 1  # due before every live entry: it takes the place of a gone one
            edf[at] = entry
        else:
            at = bisect.bisect_right(edf, entry, lo)
            edf.insert(at, entry)
        # `weight + age_rate * (now - t_enqueued)` ranks like this key, fixed at arrival
        heapq.heappush(self._prio, (self.config.age_rate_per_s * r.t_enqueued - weight, slot.seq, slot))
        heapq.heappush(self._by_role.setdefault(r.role, []), (r.deadline_s, slot.seq, slot))
        if math.isfinite(r.give_up_s):
            heapq.heappush(self._expiry, (r.give_up_at_s, slot.seq, slot))

    def _due(self, r: Request, now: float, role_weight: float) -> tuple[float, int]:
        """When `r` must be answered for the weights to reorder around it, and its kind (-1 a
        show's line, 0 another client's request, 1 the lead's): for a request a client is
        waiting on (a finite `give_up_s`), `fifo_tolerance` past the wait arrival order
        would give it (the work queued on this backend now, then its own latency), plus
        `fifo_grace_s`; the lead's, `lead_fifo_share` of that wait (no grace: the grace
        allows lateness, the lead's share promises earliness); its deadline bounds either
        (`push` applies it). A show's line is due at its cue, however early it was queued.
        Taken before `r` is charged."""
        if not math.isfinite(r.give_up_s):
            return r.deadline_s, -1
        fifo_s = self._e.total + r.est_latency_s
        if role_weight >= self._lead_weight:
            self._lead_weight = role_weight
            return now + self.config.lead_fifo_share * fifo_s, 1
        return now + (1.0 + self.config.fifo_tolerance) * fifo_s + self.config.fifo_grace_s, 0

    def admit(self, r: Request, now: float) -> float:
        """0 when `r` can finish by its give-up time behind the work that would go before it
        (queued at its weight or above and due by then; lower weights are deferred first
        under overload, later deadlines wait for it), else how long that work needs to
        drain (a Retry-After). O(weights x log n)."""
        if not math.isfinite(r.give_up_s):
            return 0.0
        cost, latency = self._estimate(r)
        audio_s = r.est_audio_s
        per_audio_s = cost / audio_s if audio_s > 0 else 0.0  # this backend's speed, as measured now
        ahead = self._costs.ahead(self._weight(r), r.give_up_at_s) * per_audio_s
        late_by = now + ahead + latency - r.give_up_at_s
        return max(0.0, late_by)

    def expire(self, now: float) -> list[Request]:
        """Take out the requests that can no longer finish by their give-up time."""
        out = []
        while self._expiry:  # NB: re-read each time: retiring may compact (rebuild) it
            at, _, slot = self._expiry[0]
            r = slot.r
            if r is not None and at - now >= r.est_latency_s:
                break
            heapq.heappop(self._expiry)
            if r is not None:
                self._retire(r)
                out.append(r)
        return out

    def _retire(self, r: Request) -> None:
        slot = self._e.retire(r)
        if slot is None:
            return
        self._costs.add(slot.weight, r.deadline_s, -slot.audio_s)

    def _top(self, heap: list[_Entry]) -> Request | None:
        slot = self._top_slot(heap)
        return slot.r if slot is not None else None

    @staticmethod
    def _top_slot(heap: list[_Entry]) -> Slot | None:
        """The heap's first live slot (its `r` is set), stale entries popped on the way."""
        while heap:
            slot = heap[0][2]
            if slot.r is not None:
                return slot
            heapq.heappop(heap)
        return None

    # --- deadlines -----------------------------------------------------------------
    def refresh(self, now: float) -> None:
        """Recompute the system's slack from the nearest `scan_limit` due times.

        When the deadlines cannot all be met (overload), the lowest-weight requests (the
        longest first among equals) are deferred until the rest can (Moore and Hodgson's
        rule, weighted, scanned in due order: see `_overloaded`): earliest-due-first over
        what is left then meets every deadline in it, the lead's included, and the deferred
        are served by weight when the slack allows. A deferred line is only held for this
        scan: out of the due order until the next scan puts it back in its place and judges
        it again, so a passing overload (or an estimate that ran high for a moment, or the
        reserve's room for the weights) does not leave it behind until it is shed or late;
        one still held when its deadline passes (an overload that lasted) leaves the order.
        `_critical` then finds what the deadlines (not the due times) allow: while every
        deadline can be met, the held lines' included, none is given up for the weights or
        the due times, but for the lead's share: the lead's client requests may make another
        client's request late (still voiced if it can be before its client gives up), never
        a show's cue."""
        if self._costs.out_of_range:
            self.reindex()  # the deadline index needs a new base (a server up for hours)
        self._compact()
        self._drop_front(now)
        edf = self._edf
        if self._lo:
            del edf[: self._lo]
            self._lo = 0
        held = [e for e in self._held if e[2].r is not None]
        self._held = []
        if len(held) <= 32:
            for e in held:
                bisect.insort(edf, e)
        else:
            edf[:] = list(heapq.merge(edf, held))  # NB: both in due order
        last_scan = self._scan
        self._scan += 1
        seen: list[_Entry] = []  # in due order
        judged: list[_Judged] = []
        n_kept = 0
        late: list[_Entry] = []  # past their deadline, a client still waiting: in due order
        k = 0
        lines: list[tuple[float, int, float, float, str]] = []  # what the slack is counted from
        speed = self.speed() if self.speed is not None else None
        limit = self.scan_limit
        for k, entry in enumerate(edf):
            if n_kept >= limit:
                k -= 1
                break
            slot = entry[2]
            r = slot.r
            if r is None:
                continue
            # NB: estimates are renewed each scan, as measured speed settles
            if speed is None:
                cost, lat = self._estimate(r)
            else:
                audio_s = r.est_audio_s
                cost = speed[0] * audio_s
                lat = speed[1] * audio_s
                if lat < cost:
                    lat = cost
            r.est_cost_s, r.est_latency_s = cost, lat
            deadline, extra = r.deadline_s, lat - cost
            if deadline - now - lat < 0:
                # a client still waits for it: it stays in due order, unless it was held
                # until its deadline passed (an overload that lasted: it goes by weight)
                if slot.held == last_scan or self._lost(r, now):
                    continue  # its deadline cannot be met any more: no room is made for it
                late.append(entry)
            else:
                judged.append((deadline, entry[1], entry, cost, extra, not math.isfinite(r.give_up_s)))
                n_kept += 1
            seen.append(entry)
            lines.append((entry[0], entry[1], cost, extra, r.role))
        deferred = self._overloaded(judged, now)
        self._critical(late, judged, deferred, now)
        keep = seen
        if deferred:
            scan, keep = self._scan, []
            for e in seen:
                if e[1] in deferred:
                    e[2].held = scan
                    self._held.append(e)  # out of the order until the next scan (still in `_prio`)
                    continue
                keep.append(e)
        edf[: k + 1] = keep  # garbage, lost and deferred lines leave the due order
        self._slack, self._work, self._role_slack = self._slack_over(lines, deferred, now)
        self._slack_at = now
        self._due_given = self._due_taken = 0.0

    @staticmethod
    def _slack_over(lines: list[tuple[float, int, float, float, str]], skip: set[int],
                    now: float) -> tuple[float, float, dict[str, float]]:  # fmt: skip
        """The least time to spare over `lines` (due, seq, cost, latency less cost, role; in
        due order) but `skip`, each behind all the work before it; that work; each role's least."""
        slack, work = math.inf, 0.0
        role_slack: dict[str, float] = {}
        for due, seq, cost, extra, role in lines:
            if seq in skip:
                continue
            work += cost
            own = due - now - work - extra
            if own < slack:
                slack = own
            if own < role_slack.get(role, math.inf):
                role_slack[role] = own
        return slack, work, role_slack

    def _critical(self, late: list[_Entry], judged: list[_Judged], deferred: set[int],
                  now: float) -> None:  # fmt: skip
        """The kept lines in deadline order, behind the `late` ones a client still waits for
        (they go first), each with the least time to spare of the lines before it, and the
        least over all of them. The lines `deferred` count too while every deadline, theirs
        included, can be met; when not, the rule that deferred them decides who is late, and
        when not even so, there is nothing to guard."""
        judged.sort()  # NB: (deadline, seq, ...): seq is unique
        work = blocking = 0.0
        for e in late:
            r = e[2].r
            if r is not None:
                work += r.est_cost_s
                blocking = max(blocking, r.est_latency_s - r.est_cost_s)
        scan = self._scan
        # NB: the deferred lines count while every deadline, theirs included, can be met (the
        # overload rule defers lines to keep due times, which are soft: else a line held scan
        # after scan for the lead's share could be shed at 60% load); else only the others
        guard = self._guard(judged, set(), work, blocking, scan, now)
        if not guard[4] and deferred:
            guard = self._guard(judged, deferred, work, blocking, scan, now)
        kept, least, least_show, blocking, feasible = guard
        for e in late:
            e[2].crit, e[2].crit_spare, e[2].crit_show = scan, math.inf, math.inf
        self._hard = late + kept if feasible else []
        self._hard_i, self._hard_slack, self._hard_show, self._hard_at = 0, least, least_show, now
        self._hard_blocking = blocking
        self._hard_given = self._hard_taken = 0.0

    @staticmethod
    def _guard(judged: list[_Judged], skip: set[int], work: float, blocking: float, scan: int,
               now: float) -> tuple[list[_Entry], float, float, float, bool]:  # fmt: skip
        """One pass over `judged` (in deadline order) but `skip`, behind `work`: marks each
        line with the scan and the least time to spare of the lines before it (of all, and of
        the shows' only); returns the lines, the least time to spare over them (all, shows'),
        the longest a line may wait for a worker beyond its share of the work ahead (its
        latency less its cost: the work is counted as spread over the workers, but a line
        holds one until it is done), and whether every deadline can be met at all."""
        kept: list[_Entry] = []
        least = least_show = math.inf
        for deadline, seq, e, cost, extra, show in judged:
            slot = e[2]
            if seq in skip:
                slot.crit = -1  # not counted: checked against the least spare time of all
                continue
            work += cost
            if extra > blocking:
                blocking = extra
            slot.crit, slot.crit_spare, slot.crit_show = scan, least, least_show
            own = deadline - now - work - extra
            if own < least:
                least = own
            if show and own < least_show:
                least_show = own
            kept.append(e)
        return kept, least, least_show, blocking, least >= -_EPS_S

    def _next_hard(self) -> Request | None:
        """The earliest deadline of the last scan's lines still queued."""
        hard, i = self._hard, self._hard_i
        while i < len(hard) and hard[i][2].r is None:
            i += 1
        self._hard_i = i
        return hard[i][2].r if i < len(hard) else None

    def _fits_deadlines(self, r: Request, now: float) -> bool:
        """Serving `r` now leaves every deadline of the last scan feasible: the earliest of
        them goes at no cost; another line pushes back the lines before it in deadline order
        (all of them, for a line the scan did not count), which must have the time to spare."""
        first = self._next_hard()
        if first is None or first is r:
            return True
        slot = self._e.slots.get(r.id)
        counted = slot is not None and slot.crit == self._scan
        if self._leads(r):  # the lead's client request: only a show's cue holds it back
            spare = slot.crit_show if counted else self._hard_show  # type: ignore[union-attr]
        else:
            spare = slot.crit_spare if counted else self._hard_slack  # type: ignore[union-attr]
        left = _left(spare, self._hard_at, self._hard_given, self._hard_taken, now)
        return r.est_cost_s <= left - self._hard_blocking + _EPS_S

    def _leads(self, r: Request) -> bool:
        """A client's request of the lead (the highest weight): due at its share of the wait."""
        return math.isfinite(r.give_up_s) and self.weights.get(r.role, r.voice.weight) >= self._lead_weight

    def _overloaded(self, judged: list[_Judged], now: float) -> set[int]:
        """Which of these (live, deadline not yet passed; in due order) to defer so that
        every other deadline is met with `overload_reserve` of its remaining time spare: the
        lightest first (the longest, then the oldest, among equals), and only lighter than
        the line that needs the room; a line that cannot be met even so is itself deferred
        (among equals the latest due, never the head of the line). Scanned in due order, so
        the reserve makes room for what is due first (the lead's share); a show's line (due
        at its deadline) counts ahead of it only the work due by its own deadline, so that
        client requests due early but with later deadlines never make its cue look lost
        (the deadline guard serves it in time)."""
        reserve, work = self.config.overload_reserve, 0.0
        for d, _, _, cost, extra, _ in judged:  # first, the common case: every line fits with all before it
            work += cost
            if d - now - work - extra < reserve * (d - now):
                return self._defer(judged, now)
        return set()  # (`_defer` counts no more work ahead of any line than this: it defers nothing)

    def _defer(self, judged: list[_Judged], now: float) -> set[int]:
        """`_overloaded`'s rule itself (O(n log n))."""
        victims: list[tuple[float, float, int, _Entry]] = []
        deferred: set[int] = set()
        work = 0.0
        clients: list[tuple[float, int, float]] = []  # (deadline, seq, cost) of client requests scanned
        client_work = client_due = 0.0  # their work; of it, what is due by the last show line's cue
        counted: set[int] = set()  # the client requests in `client_due`
        for d, seq, entry, cost, extra, show in judged:
            slot = entry[2]
            work += cost
            if show:
                while clients and clients[0][0] <= d:
                    _, c_seq, c_cost = heapq.heappop(clients)
                    if c_seq not in deferred:
                        client_due += c_cost
                        counted.add(c_seq)
            else:
                heapq.heappush(clients, (d, seq, cost))
                client_work += cost
            heapq.heappush(victims, (slot.weight, -cost, seq, entry))
            # its audio arrives a batch latency after its share of the work is done
            spare = self.config.overload_reserve * (d - now)
            while victims:
                ahead = work - (client_work - client_due) if show else work
                if d - now - ahead - extra >= spare:
                    break
                if victims[0][0] >= slot.weight:  # nothing lighter than this line is left
                    if d - now - ahead - extra < -_EPS_S:
                        deferred.add(seq)  # it cannot be met: among equals the latest due
                        work -= cost
                        if not show:
                            client_work -= cost
                    break  # the reserve defers only lower weights than the line it makes room for
                _, neg_cost, victim_seq, victim = heapq.heappop(victims)
                if victim_seq in deferred:
                    continue
                deferred.add(victim_seq)
                work += neg_cost
                if victim[2].r is not None and math.isfinite(victim[2].r.give_up_s):
                    client_work += neg_cost
                    if victim_seq in counted:
                        client_due += neg_cost
                if victim_seq == seq:
                    break
        return deferred

    @staticmethod
    def _lost(r: Request, now: float) -> bool:
        """Past its deadline, and no client waits for it any more (a show's line, or a
        request past its give-up time): it leaves the deadline order and goes by weight. A
        client's request past its deadline but not its give-up time keeps its place: else,
        with no slack left, it would wait until it is shed."""
        if r.deadline_s - now - r.est_latency_s >= 0:
            return False
        return not (math.isfinite(r.give_up_s) and r.give_up_at_s - now - r.est_latency_s >= 0)

    def _drop_front(self, now: float) -> None:
        edf, n = self._edf, self._lo
        while n < len(edf):
            r = edf[n][2].r
            if r is not None and not self._lost(r, now):
                break
            n += 1
        self._lo = n

    def _urgent(self, now: float) -> Request | None:
        """The earliest due that can still be met (the last scan's held requests are out)."""
        self._drop_front(now)
        return self._edf[self._lo][2].r if self._lo < len(self._edf) else None

    def _next_due(self, limit: int) -> Iterator[Request]:
        """Up to `limit` of the live requests after the earliest due, in due order, among
        the next `4 * limit` entries (entries of requests gone since the scan are passed
        over, not counted: the scan drops them)."""
        edf = self._edf
        i, n = self._lo + 1, 0
        end = min(len(edf), i + 4 * limit)
        while i < end and n < limit:
            r = edf[i][2].r
            i += 1
            if r is not None:
                n += 1
                yield r

    def _budget(self, now: float) -> float:
        return _left(self._slack, self._slack_at, self._due_given, self._due_taken, now)

    # --- serving -------------------------------------------------------------------
    def _preferred(self) -> tuple[Request, ...]:
        """Requests in the order the director's weights (and continuity) want them. The
        current speaker's next line goes first only over roles of no higher weight:
        continuity groups a speaker's lines, it never overrides the director's weights."""
        top = self._top_slot(self._prio)
        best = None
        if top is not None and top.r is not None:  # the weights (and age) pick the role
            best = self._top_slot(self._by_role[top.r.role]) or top  # its lines go in order
        if self.last_role is not None and self._run < self.config.continuity_max_run:
            heap = self._by_role.get(self.last_role)
            nxt = self._top_slot(heap) if heap else None
            if (nxt is not None and nxt.r is not None
                    and nxt.r.deadline_s <= self.last_deadline_s + self.config.continuity_s
                    and (best is None or nxt.weight >= best.weight)):  # fmt: skip
                if best is None or best is nxt or best.r is None:
                    return (nxt.r,)
                return (nxt.r, best.r)
        return () if best is None or best.r is None else (best.r,)

    def _next_adlib(self, accept: Accept | None) -> Request | None:
        while self._adlib and self._adlib[0].r is None:
            self._adlib.popleft()
        first = self._adlib[0].r if self._adlib else None
        return first if first is not None and (accept is None or accept(first)) else None

    def pop(self, now: float, accept: Accept | None = None) -> Request | None:
        adlib = self._next_adlib(accept)
        if adlib is not None:
            return self._take(adlib)
        if now - self._slack_at > self.stale_s:
            self.refresh(now)
        urgent = self._urgent(now)
        budget = self._budget(now)
        for r in self._preferred():
            if accept is not None and not accept(r):
                continue
            # serve the preferred request only if every due time still in the order stays
            # feasible (under overload, `refresh` deferred the lowest weights), and every
            # deadline
            on_time = urgent is None or r is urgent or r.est_cost_s <= budget
            if on_time and self._fits_deadlines(r, now):
                return self._take(r, urgent)
            break
        if urgent is None or not self._fits_deadlines(urgent, now):
            # the due order would push a deadline past: the next due that does not (the
            # lead's requests, due early, never push a client's), else deadline order
            for nxt in self._next_due(LOOKAHEAD):
                if (accept is None or accept(nxt)) and self._fits_deadlines(nxt, now):
                    return self._take(nxt, urgent)
            hard = self._next_hard()
            if hard is not None and (accept is None or accept(hard)):
                return self._take(hard, urgent)
        if urgent is not None and (accept is None or accept(urgent)):
            return self._take(urgent, urgent)
        if accept is None:
            return None
        # a batch-mate that fits the batch. NB: past the deadline guard, as the urgent one
        # above: a mate rides with a batch already started, and what it adds to the waits of
        # the lines after it is its own share of the batch's time, not a line's whole cost as
        # the guard counts it (refusing mates on that count shrank a batched model's batches
        # from 15.4 lines to 14.6 and voiced 117 of 200 requests at load 1.3 against 127)
        mate = _first_fit(self._prio, LOOKAHEAD, accept)
        return self._take(mate) if mate is not None else None

    def _take(self, r: Request, urgent: object = _NOT_DUE) -> Request:
        """Serve `r`, counting it against the time the deadlines have to spare and, for a
        decision in the due order (`urgent` its earliest due then), the due times'."""
        slot = self._e.slots.get(r.id)
        if slot is not None and slot.crit == self._scan and r is self._next_hard():
            self._hard_given += r.est_cost_s  # deadline order: no longer work ahead of any line
        else:
            self._hard_taken += r.est_cost_s  # out of it: the lines it went ahead of wait for it
        if urgent is r:
            self._due_given += r.est_cost_s  # the earliest due: likewise for the due times
        elif urgent is not _NOT_DUE:
            self._due_taken += r.est_cost_s
        self._work = max(0.0, self._work - r.est_cost_s)
        self._run = self._run + 1 if r.role == self.last_role else 0
        self.last_role, self.last_deadline_s = r.role, r.deadline_s
        self._retire(r)  # its entries in every structure are stale from now on
        return r

    def _compact(self) -> None:
        """Drop stale entries (requests that left) once they outnumber the live ones; run by
        the tick, never inside a decision. O(n), no re-keying."""
        if len(self._prio) <= 3 * self._e.live + 1024:
            return
        live = lambda e: e[2].r is not None  # noqa: E731
        self._prio = list(filter(live, self._prio))
        heapq.heapify(self._prio)
        self._expiry = list(filter(live, self._expiry))
        heapq.heapify(self._expiry)
        for role, heap in list(self._by_role.items()):
            kept = list(filter(live, heap))
            if kept:
                heapq.heapify(kept)
                self._by_role[role] = kept
            else:
                del self._by_role[role]
        self._adlib = deque(s for s in self._adlib if s.r is not None)
        self._recent = (deque(e for e in self._recent[0] if e[2].r is not None),
                        deque(e for e in self._recent[1] if e[2].r is not None))  # fmt: skip

    def discard(self, r: Request) -> bool:
        if r.id not in self._e.slots:
            return False
        self._retire(r)
        return True

    def __len__(self) -> int:
        return self._e.live

    def pending(self) -> Iterator[Request]:
        return iter(self._e.in_order())

    def reweight(self, weights: Mapping[str, float]) -> None:
        self.weights.update(weights)
        self._lead_weight = max(self.weights.values(), default=-math.inf)
        self.reindex()

    def forget(self, roles: Iterable[str]) -> None:
        for role in roles:
            self.weights.pop(role, None)
        self._lead_weight = max(self.weights.values(), default=-math.inf)

    def reindex(self) -> None:
        """Rebuild every structure from the live requests (after weights or deadlines change)."""
        live = self._e.in_order()  # keep arrival order
        self._clear()
        for r in live:
            self.push(r)

    def role_priorities(self, now: float, roles: Mapping[str, float]) -> dict[str, float]:
        """Each role's urgency (see `engine.scheduler.urgency`): from the slack the last scan
        found for it, or its first line's own slack if that is less (queued since, or
        deferred as unmeetable); 0 for a role with nothing queued. O(roles)."""
        out = dict.fromkeys(roles, 0.0)
        elapsed = now - self._slack_at
        adlib_roles = {s.r.role for s in itertools.islice(self._adlib, 64) if s.r is not None}
        for role, heap in self._by_role.items():
            first = self._top(heap)
            if first is None:
                continue
            own = first.deadline_s - now - first.est_latency_s
            slack = min(own, self._role_slack.get(role, math.inf) - elapsed)
            out[role] = 1.0 if role in adlib_roles else urgency(slack)
        return out

    def role_work(self) -> dict[str, float]:
        """Queued synthesis time by role (s)."""
        return dict(self._e.work)


_EPS_S = 1e-9
"""Time to spare below this is none (sums of estimates round: an exact fit read as a miss)."""


def _left(spare: float, since: float, given: float, taken: float, now: float) -> float:
    """Time to spare `spare` (as of a scan at `since`) still left at `now`, with `given` work
    taken since at the head of the order (no longer ahead of any line) and `taken` out of it.
    The time used up is what has passed, or (decisions taken faster than their work is done:
    several workers, a batch) the work taken, whichever is more."""
    return spare + given - max(now - since, given + taken)


def _first_fit(heap: list[_Entry], limit: int, accept: Accept) -> Request | None:
    """The first of a binary heap's best `limit` live entries (in order) that `accept`s,
    in O(limit log limit), the heap untouched."""
    n = len(heap)
    if not n:
        return None
    frontier = [(heap[0], 0)]  # NB: entries compare by (key, seq): seq is unique
    for _ in range(limit):
        if not frontier:
            return None
        entry, i = heapq.heappop(frontier)
        r = entry[2].r
        if r is not None and accept(r):
            return r
        c = 2 * i + 1
        if c < n:
            heapq.heappush(frontier, (heap[c], c))
            if c + 1 < n:
                heapq.heappush(frontier, (heap[c + 1], c + 1))
    return None
