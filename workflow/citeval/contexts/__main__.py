from citeval.contexts.cli import main

raise SystemExit(main())
