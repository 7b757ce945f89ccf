"""``python -m ccgym.cli``: the same as the ``ccgym`` command."""

import sys

from ccgym.cli import main

sys.exit(main())
