from citeval.tables.cli import main

raise SystemExit(main())
