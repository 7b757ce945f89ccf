"""``python -m ccgym``: the same as the ``ccgym`` command."""

import sys

from ccgym.cli import main

sys.exit(main())
