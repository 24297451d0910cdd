"""BENCHMARKS.md is what the committed records render, and a page a reader takes in."""

import re
from pathlib import Path

from benchmarks import page

ROOT = Path(__file__).resolve().parents[2]
NOTES = sorted((ROOT / page.NOTES_DIR).glob("*.md"))
LINK = re.compile(r"\]\(([^)]+)\)")


def test_the_page_is_the_rendered_records():
    rendered = page.render(ROOT)
    on_disk = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert rendered == on_disk, (
        "BENCHMARKS.md differs from the records in benchmarks/results/: edit the records (or "
        f"run a benchmark), then `{page.RENDER}`"
    )


def test_the_page_is_short_and_names_no_issue_or_outside_link():
    text = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert len(text.splitlines()) < 250
    assert page.REGENERATE in text
    for doc in [ROOT / "BENCHMARKS.md", *NOTES]:
        body = doc.read_text(encoding="utf-8")
        assert not re.search(r"#\d|\bissues? \d", body, re.IGNORECASE), doc
        assert "://" not in body and "www." not in body, doc


def test_every_link_of_the_page_and_the_notes_is_a_file_of_the_repository():
    assert NOTES, "docs/notes holds the investigations the page links to"
    for doc in [ROOT / "BENCHMARKS.md", *NOTES]:
        for target in LINK.findall(doc.read_text(encoding="utf-8")):
            path = (doc.parent / target.split("#")[0]).resolve()
            assert path.is_file() and ROOT in path.parents, f"{doc.name}: {target}"


def test_notes_are_short_and_dated():
    for note in NOTES:
        assert re.fullmatch(r"\d{4}-\d{2}-\d{2}-[a-z0-9-]+\.md", note.name), note.name
        assert len(note.read_text(encoding="utf-8").splitlines()) <= 60, note.name
