"""MMLongBench-Doc: question loading and data checks, PDF-to-markdown corpus, official scoring, answer extraction.

Modules:

- ``questions``: typed records (``Question``, ``QuestionSet``), filters, ``load_questions``.
- ``sources``: where question rows come from (GitHub layout, Hugging Face ``datasets``).
- ``datacheck``: the known defects of the set and missing or short PDFs.
- ``corpus``: PDF to a markdown corpus (``docab convert``).
- ``scoring``: the official scorer, Acc and generalised F1, breakdowns (``docab score``).
- ``extraction``: the official answer extraction through any model, or a submitted answer.
"""
