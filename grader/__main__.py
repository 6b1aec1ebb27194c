"""Entry point for `python -m grader`."""

from grader.cli import main

raise SystemExit(main())
