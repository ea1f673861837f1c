from citeval.bm25.cli import main

raise SystemExit(main())
