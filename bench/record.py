"""Writing a benchmark's results: the figures plus where and when they were taken."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def provenance() -> dict:
    """Date, commit and core count, so a recorded figure can be traced to its run."""
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                            capture_output=True, text=True).stdout.strip()
    return {"date": time.strftime("%Y-%m-%d"), "commit": commit, "cpu_count": os.cpu_count()}


def save_json(path: Path | None, payload: dict) -> None:
    """Write ``payload`` plus its provenance to ``path`` (nothing when path is None)."""
    if path is None:
        return
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**payload, **provenance()}, indent=1))
