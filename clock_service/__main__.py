"""``python -m clock_service``: the ``shotclock`` command (clock_service/edges/cli/main.py)."""

from clock_service.edges.cli.main import main

raise SystemExit(main())
