from citeval.regressions.cli import main

raise SystemExit(main())
