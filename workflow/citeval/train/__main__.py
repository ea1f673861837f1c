import sys

from citeval.train.cli import main

sys.exit(main())
