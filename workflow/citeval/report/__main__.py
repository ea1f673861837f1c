from citeval.report.cli import main

raise SystemExit(main())
