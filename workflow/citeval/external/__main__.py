from citeval.external.cli import main

raise SystemExit(main())
