"""SIGKILL a resume at the two points where its run has moved on but its record is not all
written, then let another process take the job over: the audit log says once that the approval
was resumed, and the run ends as it would have.

- "before the record": the resumed graph ran to its end and its checkpoint is committed; the
  process dies before the run, the job and the audit log hear of it.
- "before the job is done": the resume paused the run on its next approval (recorded, audited);
  the process dies before finishing the job, so the job is done again.

The dying process is `signoff approve` (which decides and resumes), with the step after the
graph replaced by a SIGKILL of itself; the next one is the test's own `Signoff`.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.kit.signoff import Kit

KILL = """
import os, signal, sys
from bot.approvals.jobs import JobQueue
from bot.approvals.runs import Runs
from bot.cli import main

where = sys.argv[1]
if where == "before the record":
    after_run = Runs.after_run

    async def dying_after_run(self, *args, resumed=None, **kw):
        if resumed is not None:
            os.kill(os.getpid(), signal.SIGKILL)
        return await after_run(self, *args, resumed=resumed, **kw)

    Runs.after_run = dying_after_run
else:
    finish = JobQueue.finish

    async def dying_finish(self, job_id, *args, **kw):
        os.kill(os.getpid(), signal.SIGKILL)

    JobQueue.finish = dying_finish
sys.exit(main(sys.argv[2:]))
"""


@pytest.fixture
async def kit(tmp_path: Path) -> Kit:
    bench = Kit(f"sqlite:///{tmp_path / 'signoff.db'}", tmp_path)
    await bench.db.upgrade()
    yield bench  # type: ignore[misc]
    await bench.aclose()


@pytest.mark.parametrize("where", ["before the record", "before the job is done"])
async def test_a_resume_killed_before_its_record_is_audited_once_by_the_next_process(
    kit: Kit, where: str
) -> None:
    report = await kit.start(
        "vendor_payment", {"vendor": "acme", "invoice_id": "inv-1", "amount": 120.0}
    )
    (invoice,) = report.approvals
    if where == "before the record":  # the run's last approval: the resume runs to the end
        await kit.app.decide(invoice, "U_ALICE", True)
        await kit.app.run_jobs(("resume",))
        (approval,) = [a["id"] for a in await kit.approvals() if a["id"] != invoice]
        await kit.app.decide(approval, "U_DAVE", True)  # the first of the two it needs
    else:
        approval = invoice

    died = kit.python(KILL, where, "approve", approval, "--as", "U_ALICE")
    assert died.returncode == -9, died.stderr
    left = await kit.audit("resumed", approval)  # what the dead process left
    assert len(left) == (0 if where == "before the record" else 1), left

    kit.clock.advance(120)  # past the dead process's lease on the job
    await kit.app.run_jobs(("resume",))
    await kit.app.run_jobs(("resume",))

    resumed = await kit.audit("resumed", approval)
    assert [e["data"]["approved"] for e in resumed] == [True], resumed
    assert await kit.pending_jobs("resume") == 0
    run = await kit.run(report.thread_id)
    if where == "before the record":
        assert (run["status"], await kit.effects("payment", report.thread_id) != []) == (
            "completed",
            True,
        )
    else:
        assert run["status"] == "paused"
        assert len(await kit.approvals(report.thread_id)) == 2
