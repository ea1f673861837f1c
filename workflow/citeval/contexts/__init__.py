"""Local citation contexts (HAtten, Gu et al. 2022): the queries of local citation
recommendation, the text around one citation marker.

Two steps, one ``extract`` job per input file and one ``merge`` over all of them::

    python -m citeval.contexts extract --format s2orc_v2020 --input pdf_parses_0.jsonl.gz \\
        --output staging/pdf_parses_0.parquet --report staging/pdf_parses_0.json \\
        --window-unit chars --window-chars 200 --marker-token CIT --max-bad-fraction 0
    python -m citeval.contexts merge --staging staging/*.parquet --reports staging/*.json \\
        --papers results/demo/corpus/papers --output results/demo/local/contexts.parquet \\
        --report results/demo/local/contexts_report.json --threads 2 --memory-limit 2GB

The modules, one job each:

- ``window``: markers from cite spans, the ``chars`` and ``sentences`` windows;
- ``sources``: reading a record of each input format (S2ORC v2020, S2AG, curated);
- ``report``: what extract counts, malformed records and spans;
- ``extract``: one input file's contexts; ``merge``: all of them against the corpus;
- ``cli``: the command line (``python -m citeval.contexts``).
"""

from __future__ import annotations

from citeval.contexts.extract import RAW_SCHEMA, extract_contexts
from citeval.contexts.merge import CONTEXTS_SCHEMA, merge_contexts

__all__ = ["CONTEXTS_SCHEMA", "RAW_SCHEMA", "extract_contexts", "merge_contexts"]
