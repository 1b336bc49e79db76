"""``python -m haiku_desk``: the same as the ``haiku-desk`` command."""

import sys

from haiku_desk.app import main

sys.exit(main())
