"""citeval: evaluation of article encoders and BM25 on citation recommendation, and MDCR.

Each pipeline stage is a module with a ``main()`` and is runnable as ``python -m citeval.<stage>``.
"""

__version__ = "0.1.0"
