"""Python's cyclic garbage collector in the `signoff` process: off while a command's modules load,
back on (the modules' objects set aside for good) before the command runs, and told at exit to
leave everything be.

Loading the modules makes hundreds of thousands of objects (classes, functions, SQLAlchemy's
tables, compiled patterns) and no garbage; the collector would walk them again and again as they
are made, and all of them once more at exit: together about a fifth of `signoff pending`'s time.
`gc.freeze` moves what exists to a generation the collector never looks at again, which suits
objects that live as long as the process.

Only for the process `main` owns (`main()` without arguments, as the `signoff` script calls
it): a caller of `main(ARGS)` in its own process keeps its collector as it was.
"""

from __future__ import annotations

import gc

__all__ = ["exiting", "loaded", "loading"]


def loading() -> None:
    """The command's modules are about to load: the collector off."""
    gc.disable()


def loaded() -> None:
    """The modules are in: what they made set aside for good, the collector back on for what the
    command makes (a long one, `run` or `worker`, needs it). Nothing when `loading` was not
    called (the collector is on)."""
    if not gc.isenabled():
        gc.freeze()
        gc.enable()


def exiting() -> None:
    """The command is done: nothing made so far is looked at again by the collections Python
    runs as it exits."""
    gc.freeze()
