"""vision-bridge: a vision sidecar MCP server that lets a text-only model see images.

Three tools, ``analyze_image``, ``ocr_image`` and ``compare_images``, forward images to a vision
model (OpenAI Chat Completions or Anthropic Messages format, through the official SDKs) or read
their text offline with Tesseract. Every result reports the vision model's token use in
``_meta["io.github.docab/usage"]``. See ``tools/vision_bridge/README.md``.

Library use, without MCP::

    from vision_bridge.config import load_settings
    from vision_bridge.service import create_service

    service = create_service(load_settings(os.environ))
    outcome = await service.ocr("scan.png", format="markdown")
    print(outcome.text, outcome.meta)
"""

__version__ = "0.1.0"
