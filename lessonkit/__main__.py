"""`python -m lessonkit ...` runs the same command line as `lessonkit ...`."""

from lessonkit.cli import main

raise SystemExit(main())
