#!/usr/bin/env sh
# Create the throwaway LangGraph virtualenv used only by the benchmarks in bench/.
# LangGraph is never a dependency of signoff; this venv lives outside the project.
#
# Usage: bench/langgraph-venv.sh [VENV_DIR]    (default: $LANGGRAPH_VENV or /tmp/signoff-lg-venv)
# Python: $PYTHON or python3 (3.11+).
set -eu
VENV="${1:-${LANGGRAPH_VENV:-/tmp/signoff-lg-venv}}"
PY="${PYTHON:-python3}"
if [ ! -x "$VENV/bin/python" ]; then
    "$PY" -m venv "$VENV"
fi
"$VENV/bin/python" -m pip install --quiet --upgrade pip
"$VENV/bin/python" -m pip install --quiet \
    langgraph langgraph-checkpoint-sqlite langgraph-checkpoint-postgres "psycopg[binary]" psycopg-pool
"$VENV/bin/python" -c "import importlib.metadata as m; print('langgraph', m.version('langgraph'), 'in $VENV')"
