"""``docab view``: a static HTML viewer of a run, written into the run as ``viewer/``.

``RUN_DIR/viewer/``
    ``index.html``          one self-contained page (inline CSS and JavaScript, the data as JSON):
                            the run header, the report's tables, the plots, the question table
                            with its filters, and the question view (every arm side by side)
    ``transcripts/<n>.js``  one per transcript, loaded by the page only when a question is opened
                            (a ``<script>``: pages opened from disk may load scripts, not fetch)

The page refers to ``../plots/*.png`` and ``../images/<sha256>.<ext>`` by relative path, so it
opens from disk (``file://``) with no server and no network, as long as it stays inside the run.

Modules: ``page`` (pure: records, transcripts and summary to the page's data), ``html`` (pure: the
page and the transcript scripts as text), ``writer`` (reads the run, writes the folder).
"""
