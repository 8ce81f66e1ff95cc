"""Every ``docab`` command's face, and only here.

Each command module exposes ``register(subparsers)`` and imports what it needs inside its handler,
so ``docab --help`` stays fast. :mod:`docab.cli.main` lists them; :mod:`docab.cli.errors` holds the
one error type these faces print as one line.
"""
