from citeval.retrieve.cli import main

raise SystemExit(main())
