"""What the heatmap, `/metrics` `troupe_role_priority` and the probe show for each role:
its urgency, from the slack the scheduler computes for its most pressed line.

Slack of a queued line = its deadline - now - the synthesis work due before it and its own
(in deadline order) - the batch latency beyond that work; a role's slack is the least over
its lines. Urgency maps it to 0..1: 0 with nothing queued (or URGENCY_HORIZON_S or more to
spare), 1 when a line is due now or cannot be met; an ad-lib waiting counts as 1 (it goes
first). A role with lines queued never reads below QUEUED_FLOOR, so the heatmap shows it."""

from __future__ import annotations

import math

URGENCY_HORIZON_S = 10.0
QUEUED_FLOOR = 0.05


def urgency(slack_s: float) -> float:
    """A queued role's urgency for a slack of `slack_s` seconds."""
    if math.isnan(slack_s):
        return QUEUED_FLOOR
    return min(1.0, max(QUEUED_FLOOR, 1.0 - slack_s / URGENCY_HORIZON_S))
