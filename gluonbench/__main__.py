from gluonbench.cli import main

raise SystemExit(main())
