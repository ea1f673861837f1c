from citeval.mdcr.cli import main

raise SystemExit(main())
