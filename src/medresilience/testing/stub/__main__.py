"""`python -m medresilience.testing.stub`: the stub server as a process (see cli.py)."""

from .cli import main

raise SystemExit(main())
