"""Every relative link and image in the README and the docs points at a file that exists (a
screenshot named before it was taken showed as a broken image on the project's front page)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DOCS = [ROOT / "README.md", ROOT / "presets" / "README.md", ROOT / "bench" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)\s]*)?\)")


def links():
    for doc in DOCS:
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in LINK.finditer(line):
                if not re.match(r"[a-z]+:", m.group(1)):
                    yield doc.relative_to(ROOT).as_posix(), lineno, m.group(1)


@pytest.mark.parametrize("doc, lineno, target", list(links()))
def test_relative_links_point_at_files(doc, lineno, target):
    assert (ROOT / doc).parent.joinpath(target).exists(), f"{doc}:{lineno}: {target} is missing"


def test_the_docs_have_links_to_check():
    assert sum(1 for _ in links()) > 20
