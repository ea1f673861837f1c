import sys

from citeval.mdcr.cli import main

sys.exit(main())
