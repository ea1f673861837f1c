from citeval.sample.cli import main

raise SystemExit(main())
