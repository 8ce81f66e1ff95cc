"""``vision-bridge``: start the MCP server on stdio (configured by the environment).

``--help`` and ``--version`` import neither the MCP SDK nor any provider SDK, so they are instant.
Configuration problems are reported on stderr, all at once, with exit status 1.
"""

from __future__ import annotations

import argparse
import logging
import os
import signal
import sys
from collections.abc import Sequence
from importlib import resources

from vision_bridge import __version__
from vision_bridge.config import ENV_HELP, load_settings
from vision_bridge.errors import ConfigError

DESCRIPTION = """\
A vision sidecar MCP server (stdio): lets a text-only model describe images, read their text and
compare them, by asking a vision model (OpenAI or Anthropic format) or, offline, Tesseract.
Tools: analyze_image, ocr_image, compare_images. Every result reports the vision model's token use
in _meta["io.github.docab/usage"]."""

EPILOG = (
    ENV_HELP
    + """
Examples:
  VISION_API_BASE_URL=https://api.openai.com/v1 VISION_API_KEY=sk-... VISION_MODEL=gpt-4o vision-bridge
  VISION_API_FORMAT=anthropic VISION_API_BASE_URL=https://api.anthropic.com \\
      VISION_API_KEY=sk-ant-... VISION_MODEL=claude-sonnet-4-5 vision-bridge
  VISION_BACKEND=tesseract vision-bridge          # offline OCR, nothing leaves the machine

  vision-bridge --skill > SKILL.md                # the skill file that tells a host when to call it
"""
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="vision-bridge",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("-V", "--version", action="version", version=f"vision-bridge {__version__}")
    parser.add_argument(
        "--skill", action="store_true", help="print the vision-sidecar skill file for MCP hosts and exit"
    )
    from docab_mcpguard.access import add_flags
    from vision_bridge.config import ACCESS

    add_flags(
        parser,
        ACCESS,
        hosts_help="a host image URLs may reach on a loopback or private address; none: no image URLs",
        paths_help="a folder local images may come from (default: the client's MCP roots, else the "
        "working and temp folders)",
    )
    return parser


def skill_text() -> str:
    return resources.files("vision_bridge").joinpath("skill/vision-sidecar.md").read_text(encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return _main(argv)
    except KeyboardInterrupt:  # Ctrl-C while starting (imports take a moment): no traceback
        return 130


def _main(argv: Sequence[str] | None) -> int:
    args = build_parser().parse_args(argv)
    if args.skill:
        sys.stdout.write(skill_text())
        return 0
    _exit_quietly_on_signals()
    level = os.environ.get("VISION_LOG_LEVEL", "INFO").strip().upper()
    from docab_mcpguard.serving import log_to_stderr

    log_to_stderr(
        "vision-bridge", level if level in logging.getLevelNamesMapping() else "INFO", show_level=False
    )
    if level != "DEBUG":
        # One INFO line per provider request from the HTTP clients is noise in a host's server log.
        for name in ("httpx", "httpx2", "httpcore"):
            logging.getLogger(name).setLevel(logging.WARNING)
    try:
        settings = load_settings(
            os.environ,
            host_flags=args.allow_host,
            path_flags=args.allow_path,
            structured_output=args.structured_output,
            max_message_mb=args.max_message_mb,
        )
        from vision_bridge.service import create_service

        service = create_service(settings)
    except ConfigError as exc:
        print(
            f"vision-bridge: cannot start, the configuration has problems:\n{exc}\n"
            "Run 'vision-bridge --help' for every setting.",
            file=sys.stderr,
        )
        return 1
    from vision_bridge.server import build_server

    app = build_server(
        service,
        follow_roots=settings.follow_roots,
        structured_output=settings.structured_output,
        url_images=settings.url_images,
        max_message_bytes=settings.max_message_bytes,
    )
    logging.getLogger("vision_bridge").info("serving on stdio: %s", settings.describe())
    from docab_mcpguard import run_until_stopped

    # EOF, Ctrl-C and SIGTERM all end it quietly (the lifespan closes the service).
    return run_until_stopped(app.run)


def _exit_quietly_on_signals() -> None:
    """Until the server installs its own handlers, Ctrl-C or SIGTERM during start-up ends the
    process at once and silently: an interrupt inside an import can surface as some other error,
    with a traceback (pydantic, for one, reports it as a SchemaError)."""

    def leave(signum: int, _frame: object) -> None:
        os._exit(130 if signum == signal.SIGINT else 143)

    signal.signal(signal.SIGINT, leave)
    signal.signal(signal.SIGTERM, leave)


if __name__ == "__main__":
    sys.exit(main())
