"""citeval: evaluation of article encoders and BM25 on citation recommendation, and MDCR.

Each pipeline stage is a subpackage whose ``cli`` module holds its command line, runnable as
``python -m citeval.<stage>`` or ``citeval <stage>``; docs/architecture.md shows how the
config, the plan and the layout decide what runs.
"""

__version__ = "0.1.0"
