from citeval.learning.cli import main

raise SystemExit(main())
