"""``docab`` subcommands of the harness: ``run``, ``demo``, ``merge``. Each module exposes
``register(subparsers)`` and imports what it needs inside its handler, so ``docab --help`` stays fast."""
