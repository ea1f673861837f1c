from citeval.fusion.cli import main

raise SystemExit(main())
