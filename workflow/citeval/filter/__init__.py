"""Prefilter: keep the papers a citation-recommendation experiment can use.

The paper's four rules (Medić & Šnajder 2022) are: a year, a title, an abstract of at
least 30 characters, and at least 3 citations. Each rule is applied to every paper and the
report counts both how many papers fail each rule on its own and how many each rule
removes when the rules are applied in order, so the numbers can be compared with the
paper's (81.1M -> about 16M).

Output ``filtered/papers.parquet`` holds ids and metadata but no text: later stages join
text back from the corpus only for the papers they need.

    python -m citeval.filter --papers results/demo/corpus/papers \
        --output results/demo/filtered/papers.parquet \
        --report results/demo/filtered/filter_report.json

The rules and the step are :mod:`citeval.filter.prefilter`; the command line is
:mod:`citeval.filter.cli`.
"""

from __future__ import annotations

from citeval.filter.prefilter import CITATION_COLUMNS, PrefilterRules, prefilter

__all__ = ["CITATION_COLUMNS", "PrefilterRules", "prefilter"]
