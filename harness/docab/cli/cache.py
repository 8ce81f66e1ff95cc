"""``docab cache info`` and ``docab cache prune``: the response cache's folder, size and upkeep."""

from __future__ import annotations

import argparse

HELP = """\
docab's response cache (docab run --cache, [model] cache = true) keeps model replies on disk,
keyed by everything that determines them, in $DOCAB_CACHE_DIR (default: the platform's user cache
folder). Entries expire after 30 days; beyond the size cap (5 GiB unless pruned to another) the
least recently used are removed as new ones arrive.

examples:
  docab cache info                         # where it is, how many replies, how large
  docab cache prune --older-than 7         # drop replies stored more than 7 days ago
  docab cache prune --max-size 1           # cap it at 1 GiB (kept as its size cap)
"""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "cache",
        help="the response cache: info, prune",
        description=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(dest="action", metavar="ACTION", required=True)
    info = actions.add_parser("info", help="the cache's folder, entries and size")
    info.set_defaults(func=main)
    prune = actions.add_parser("prune", help="remove expired, old or excess replies")
    prune.add_argument(
        "--older-than", type=_positive, metavar="DAYS", help="remove replies stored more than DAYS ago"
    )
    prune.add_argument(
        "--max-size", type=_positive, metavar="GIB", help="the cache's size cap in GiB (kept for later runs)"
    )
    prune.set_defaults(func=main)


def _positive(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a positive number, got {text!r}")
    return value


def _size(count: float) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB"):
        if count < 1024 or unit == "GiB":
            return f"{count:,.0f} {unit}" if unit == "bytes" else f"{count:,.1f} {unit}"
        count /= 1024
    return f"{count:,.1f} GiB"


def main(args: argparse.Namespace) -> int:
    from docab.models.cache import DAY_S, ResponseCache, cache_dir

    directory = cache_dir()
    if args.action == "info" and not directory.exists():
        print(f"response cache: {directory} (empty: no run has used it)")
        return 0
    cache = ResponseCache(directory)
    try:
        if args.action == "prune":
            result = cache.prune(
                older_than_s=args.older_than * DAY_S if args.older_than else None,
                max_bytes=int(args.max_size * 1024**3) if args.max_size else None,
            )
            print(f"removed {result.expired} expired or old and {result.culled} excess replies")
        info = cache.info()
    finally:
        cache.close()
    print(
        f"response cache: {info.directory}: {info.entries} replies, {_size(info.bytes)} "
        f"(size cap {_size(info.size_limit)})"
    )
    return 0
