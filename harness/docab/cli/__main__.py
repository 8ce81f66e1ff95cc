"""``python -m docab.cli``: the same as the ``docab`` command."""

import sys

from docab.cli.main import main

sys.exit(main())
