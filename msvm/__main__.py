from msvm.cli import main

raise SystemExit(main())
