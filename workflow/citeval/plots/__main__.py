from citeval.plots.cli import main

raise SystemExit(main())
