"""The implementation of `SQLSaver` (`graphs.checkpoint.sql`), one idea per module:

- `engine.py`: URLs and drivers, the engines' hooks, raw-cursor transactions;
- `statements.py`: the SQL, written once and rendered for each database;
- `tables.py`: the tables, as SQLAlchemy metadata (the migrations create them);
- `read.py`, `write.py`, `prune.py`: each operation as a function of one transaction;
- `values.py`: stored rows back into values, appended lists rebuilt;
- `locks.py`: one run per thread (`lock_thread`), by locks released when the holder dies, even
  by SIGKILL;
- `gate.py`: on SQLite, one writer at a time per file within the process, handed over in order
  (SQLite's own busy wait sleeps and polls);
- `schema.py`: the schema revision and its migrations (in `graphs/checkpoint/migrations/`).

Everything here needs SQLAlchemy, so nothing outside `sql.py` imports it: `import graphs` stays
free of SQLAlchemy.
"""
