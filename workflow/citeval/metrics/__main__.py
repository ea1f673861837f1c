from citeval.metrics.cli import main

raise SystemExit(main())
