from citeval.export.cli import main

raise SystemExit(main())
