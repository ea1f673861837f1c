from citeval.ingest.cli import main

raise SystemExit(main())
