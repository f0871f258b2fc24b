"""What an engine reports: verdict, figures, and the shortest trace per broken invariant."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Tuple

HOLDS, VIOLATED, INTERRUPTED = "holds", "violated", "interrupted"


@dataclass
class Trace:
    """A behaviour: ``states[0]`` is initial; ``labels[i]`` leads from ``states[i]`` to ``states[i+1]``."""
    states: list
    labels: List[Tuple]
    invariant: Optional[str] = None

    @property
    def steps(self) -> int:
        return len(self.labels)


@dataclass
class Result:
    engine: str
    verdict: str
    distinct_states: int
    generated_states: int
    depth: int
    elapsed: float
    peak_rss_mb: float
    violations: List[Trace] = field(default_factory=list)
    complete: bool = True          # False when a depth/state bound cut the search
    collision_probability: float = 0.0
    reason: str = ""               # why an interrupted search stopped (Ctrl-C, a memory limit)

    @property
    def states_per_second(self) -> float:
        return self.distinct_states / self.elapsed if self.elapsed > 0 else float(self.distinct_states)
