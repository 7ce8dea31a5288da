"""``python -m pktsim``: the same as the ``pktsim`` command."""

import sys

from .cli import main

sys.exit(main())
