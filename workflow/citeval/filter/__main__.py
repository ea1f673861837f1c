from citeval.filter.cli import main

raise SystemExit(main())
