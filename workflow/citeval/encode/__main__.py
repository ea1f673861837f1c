from citeval.encode.cli import main

raise SystemExit(main())
