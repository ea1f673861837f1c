from citeval.ltr.cli import main

raise SystemExit(main())
