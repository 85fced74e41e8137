"""A script playing live: the show (`show`), where it stands and when things in it happen
(`times`), where each line sits and when it must be voiced (`planner`), what the show knows
of each line (`tracks`), ad-libs (`adlibs`), timed lines fitted to their slots (`fit`), the
line check (`listen`) and waiting before the first sound until the lines ahead can be on
time (`prepare`)."""

from engine.show.show import BLOCK_FRAMES, RELEASE_AFTER_S, Show
from engine.show.tracks import CueState, CueTrack, ShowStats

__all__ = ["BLOCK_FRAMES", "RELEASE_AFTER_S", "CueState", "CueTrack", "Show", "ShowStats"]
