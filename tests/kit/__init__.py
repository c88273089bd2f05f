"""What the tests share, imported as `tests.kit.<module>` (the repository root is on `sys.path`:
pytest's `pythonpath`, and `PYTHONPATH` for the subprocesses that load test workflows).

- `pg`: the PostgreSQL server of the tests, a schema per test, and the one "in CI" rule.
- `together`: several `python -c` processes released at the same moment.
- `flows`: workflows and a policy for the governance tests, registered by dotted path.
- `signoff`: `Kit`, a test bench for the governance core (`Signoff` on one database).
- `slack`: approvals to render, and readers of what was rendered.
- `e2e`: the fake Slack and the bot as real processes (`bot.sandbox.processes`), and `E2E`.
- `faults`: the invariants every approved refund keeps, whatever was killed on the way.
- `e2e_fixtures`: the end-to-end fixtures (`fake_slack`, `http`, `bot_db`, `e2e`) conftests import.
- `scenario`: the real Bolt app in process, on a SQLite file, against an in-process fake Slack.
- `sql_worker`: a script run as a process of its own by the SQL saver tests.
"""
