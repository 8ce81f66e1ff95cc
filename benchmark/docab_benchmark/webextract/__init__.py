"""The article-extraction benchmark (scrapinghub/article-extraction-benchmark layout).

- :mod:`.data`: load ``html/<sha256>.html.gz`` + ``ground-truth.json`` into typed pages.
- :mod:`.metric`: the benchmark's shingle metric, exactly as its ``evaluate.py``.
- :mod:`.extractors`: markfetch and the baselines it is compared with.
- :mod:`.runner`: run extractors over pages, time them, score them.
- :mod:`.command`: ``docab webextract``.
"""
