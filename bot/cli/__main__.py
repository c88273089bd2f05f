"""`python -m bot.cli`: the `signoff` command."""

import sys

from . import main

sys.exit(main())
