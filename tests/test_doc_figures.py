"""Every figure the docs quote matches the benchmark result it names.

A figure is quoted with a marker right after its number (and unit):

    1.44×<!-- fig: headline_4k.json:scenes.hanging.final_ratio -->
    5.1 %<!-- fig: headline_4k.json:scenes.sphere.final_strain *100 -->

FILE is relative to ``bench/results/``; PATH is a dotted path of keys and list indices into
its JSON; an optional ``*SCALE`` multiplies the value (``*100``: a fraction as a percentage,
``*1000``: metres as millimetres). The quoted number must equal the value at the precision it
is quoted (``1.44`` matches 1.435 to 1.445; thousands separators and a leading minus allowed).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
DOCS = [ROOT / "README.md", ROOT / "presets" / "README.md", ROOT / "bench" / "README.md",
        *sorted((ROOT / "docs").glob("*.md"))]

MARKER = re.compile(r"<!--\s*fig:\s*([^:\s]+):(\S+)\s*(?:\*\s*([0-9.eE+-]+))?\s*-->")
# the number just before a marker: digits with optional thousands commas and decimals, then
# at most a short unit (×, %, ms, mm, s, D; ** of bold), with or without a space
NUMBER = re.compile(r"([-−]?\d[\d,]*(?:\.\d+)?)(?:\s?[^\s\d<>()|\[\]]{0,4})$")


def markers():
    """(doc, line number, quoted text, file, path, scale) for every marker in the docs."""
    found = []
    for doc in DOCS:
        if not doc.exists():
            continue
        for lineno, line in enumerate(doc.read_text(encoding="utf-8").splitlines(), 1):
            for m in MARKER.finditer(line):
                number = NUMBER.search(line[:m.start()])
                found.append((doc.relative_to(ROOT).as_posix(), lineno,
                              number.group(1) if number else None,
                              m.group(1), m.group(2), float(m.group(3) or 1.0)))
    return found


def lookup(file: str, path: str):
    """The value at ``path`` in bench/results/``file``; a clear error where it is missing."""
    source = RESULTS / file
    if not source.is_file():
        raise LookupError(f"bench/results/{file} does not exist")
    value = json.loads(source.read_text(encoding="utf-8"))
    walked = []
    for key in path.split("."):
        walked.append(key)
        if isinstance(value, list) and re.fullmatch(r"-?\d+", key) and -len(value) <= int(key) < len(value):
            value = value[int(key)]
        elif isinstance(value, dict) and key in value:
            value = value[key]
        else:
            raise LookupError(f"bench/results/{file} has no '{'.'.join(walked)}'")
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise LookupError(f"bench/results/{file}:{path} is {value!r}, not a number")
    return value


FOUND = markers()


def test_the_docs_quote_figures():
    assert FOUND, "no figure markers found: has the marker syntax changed?"


@pytest.mark.parametrize("doc,lineno,quoted,file,path,scale", FOUND,
                         ids=[f"{d}:{n}" for d, n, *_ in FOUND])
def test_quoted_figure_matches_its_result_file(doc, lineno, quoted, file, path, scale):
    where = f"{doc}:{lineno} quotes {file}:{path}"
    assert quoted is not None, f"{where}, but no number stands right before the marker"
    try:
        value = lookup(file, path) * scale
    except LookupError as err:
        pytest.fail(f"{where}: {err}")
    text = quoted.replace(",", "").replace("−", "-")
    decimals = len(text.split(".")[1]) if "." in text else 0
    # at the precision quoted; either rounding of a half is accepted
    assert abs(value - float(text)) <= 0.5 * 10.0 ** -decimals * (1 + 1e-9), (
        f"{where}: the file says {value:.{decimals + 2}f}, the text {quoted}")


def test_every_result_file_is_quoted_or_named_by_a_doc():
    """bench/results/ holds what the docs quote: a result file no doc names is stale (git
    history keeps old runs), so it goes."""
    text = "\n".join(doc.read_text(encoding="utf-8") for doc in DOCS if doc.exists())
    unnamed = [f.name for f in sorted(RESULTS.iterdir())
               if f.is_file() and f.name not in text and f.stem not in text]
    assert not unnamed, f"bench/results/ files no doc names: {', '.join(unnamed)}"
