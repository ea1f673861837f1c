import sys

from citeval.bm25.cli import main

sys.exit(main())
