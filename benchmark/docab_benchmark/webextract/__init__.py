"""Web-extraction benchmarks: the article-extraction benchmark's layout and the
web-content-extraction benchmark's (per-page JSON with must / must-not sentences).

- :mod:`.data`: load either layout into typed pages, each in a dev or a validation part.
- :mod:`.metric`: the article-extraction benchmark's shingle metric, exactly as its
  ``evaluate.py``, and the must / must-not sentence rates.
- :mod:`.extractors`: markfetch and the baselines it is compared with.
- :mod:`.runner`: run extractors over pages, time them, score them.
- ``docab webextract`` (:mod:`docab.cli.webextract`) is the command.
"""
