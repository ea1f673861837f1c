import sys

from citeval.local.cli import main

sys.exit(main())
