"""``python -m solver``: see ``cli.py``."""

from .cli import main

raise SystemExit(main())
