import sys

from citeval.rerank.cli import main

sys.exit(main())
