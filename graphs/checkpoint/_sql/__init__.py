"""The implementation of `SQLSaver` (`graphs.checkpoint.sql`), one idea per module:

- `engines.py`: `SQLEngines`, the saver's state and its engines, made on first use (the base
  of `SQLSaver`);
- `holds.py`: `ThreadHolds`, one run per thread (`lock_thread`), and a lost lock taken back
  before a write (between `SQLEngines` and `SQLOperations`);
- `running.py`: `SQLOperations`, how each operation runs: a transaction on a pooled
  connection, or on the connection the run holding its thread holds; an async one on a SQLite
  file, whole in the saver's own thread (between `ThreadHolds` and `SQLSaver`);
- `engine.py`: URLs and drivers, the engines' hooks, raw-cursor transactions;
- `one_trip.py`: the async SQLite driver with one trip to aiosqlite's thread a statement (the
  bot's tables, and the saver's setup);
- `wire.py`: a sync run's PostgreSQL statements on libpq itself (psycopg's `pq` layer), without
  psycopg's cursor: prepared once, pipelined, rows decoded from binary;
- `statements.py`: the SQL, written once and rendered for each database;
- `tables.py`: the tables, as SQLAlchemy metadata (the migrations create them);
- `read.py`, `write.py`, `prune.py`: each operation as a function of one transaction;
- `branch.py`: a `put` that branches from a past checkpoint (LangGraph's time travel), a
  compare-and-set on the head, then `write.py`'s `put`, in one transaction;
- `values.py`: stored rows back into values, appended lists rebuilt;
- `locks.py`: the locks of one run per thread, released when the holder dies, even by SIGKILL;
- `gate.py`: on SQLite, one writer at a time per file within the process, handed over in order
  (SQLite's own busy wait sleeps and polls);
- `alembic.py`: a set of tables migrated by Alembic, with its own version table and lock;
- `schema.py`: the checkpoint tables' schema revision and migrations (in
  `graphs/checkpoint/migrations/`).

Nothing here imports `sql.py`: the saver is built on these modules. Everything here needs
SQLAlchemy, so only what needs a database imports it (`graphs.checkpoint.sql`,
`graphs.store.sql`, `graphs.cache.sql`, the migrations' `env.py`, the bot's database), and
`import graphs` stays free of SQLAlchemy.
"""
