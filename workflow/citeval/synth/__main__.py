from citeval.synth.cli import main

raise SystemExit(main())
