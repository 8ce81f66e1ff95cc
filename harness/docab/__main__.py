"""``python -m docab``: the same as the ``docab`` command."""

import sys

from docab.cli.main import main

sys.exit(main())
