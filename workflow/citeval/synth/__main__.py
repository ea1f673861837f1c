"""``python -m citeval.synth``: see :func:`citeval.synth.corpus.build_parser`."""

import sys

from citeval.synth.corpus import main

sys.exit(main())
