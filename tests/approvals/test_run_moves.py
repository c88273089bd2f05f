"""A run's lifecycle: `RUN_MOVES` names every status, and `check_run_move` refuses the rest."""

from typing import get_args

import pytest

from bot.approvals.errors import RunStateError
from bot.approvals.models import RUN_MOVES, RunRecord, RunStatus, check_run_move


def test_every_status_says_where_it_may_move() -> None:
    assert set(RUN_MOVES) == set(get_args(RunStatus))
    for moves in RUN_MOVES.values():
        assert moves <= set(get_args(RunStatus))


def test_a_final_status_moves_nowhere() -> None:
    with pytest.raises(RunStateError) as e:
        check_run_move("refund-1", "completed", "running")
    assert (
        e.value.message
        == "run 'refund-1' cannot move from completed to running: completed is final"
    )


def test_an_illegal_move_names_where_it_may_go() -> None:
    with pytest.raises(RunStateError) as e:
        check_run_move("refund-1", "paused", "running")
    assert e.value.message == (
        "run 'refund-1' cannot move from paused to running: from paused a run moves only to "
        "cancelled, completed, failed, outcome_unknown, paused"
    )
    check_run_move("refund-1", "failed", "running")  # a retry


def test_a_record_is_its_row_again() -> None:
    row = {
        "thread_id": "refund-1", "workflow": "refund", "requester": "U_CAROL", "channel": None,
        "status": "paused", "input": '{"amount": 12}', "result": None, "error": None,
        "owner": "host:1:a", "created_at": 1.0, "updated_at": 2.0,
    }  # fmt: skip
    run = RunRecord.from_row(row)
    assert run.to_row() == row
    assert run.inputs == {"amount": 12}
    with pytest.raises(RunStateError):
        run.check_move("running")
