"""Runs: a workflow started on a thread, run until it pauses or ends, and resumed by the worker
with the decision its approval got; how each stop is recorded (the run's status, its audit
entries, its events), and the retention of finished runs.

`Runs` is assembled from one module per job, imports flowing down:

- `_start`: starting a run (its checks, its row, the run until it pauses, the hand-over).
- `_resume`: the worker's resume and retry jobs.
- `_control`: retry, cancel and purge, and who may from Slack.
- `_record` (at the bottom): the parts every job shares, `RunReport`, and how a stop is recorded.
"""

from __future__ import annotations

from ._control import CANCELLABLE, PURGEABLE, RETRYABLE, Controlling
from ._record import RunReport
from ._resume import Resuming
from ._start import Starting

__all__ = ["CANCELLABLE", "PURGEABLE", "RETRYABLE", "RunReport", "Runs"]


class Runs(Starting, Resuming, Controlling):
    """Starts, resumes and records the runs of the registered workflows."""
