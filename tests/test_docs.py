"""The docs as a reader finds them: a short README, a page per reader, a site that builds strictly, pages made from
the code that are current, and every transcript written as one (so that none escapes being run)."""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import REPO

DOCS = REPO / "docs"
README_MOST = 150
READERS = ("learners", "instructors", "staff", "fairness", "architecture")
LINK = re.compile(r"\]\(([^)#\s]+)(#[^)\s]*)?\)")


def docs_module(name: str):
    """docs/NAME.py, imported as docs_NAME."""
    spec = importlib.util.spec_from_file_location(f"docs_{name}", DOCS / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_the_readme_is_short_and_links_each_reader_to_their_page() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) <= README_MOST
    targets = {target for target, _ in LINK.findall(readme) if not target.startswith("http")}
    for reader in READERS:
        assert f"docs/{reader}/index.md" in targets, reader
    missing = [target for target in targets if not (REPO / target).exists()]
    assert missing == []


def test_the_learners_page_sets_up_as_the_readme_does() -> None:
    """The one-liner is written twice (the README's is what CI and a newcomer run): the two must not drift."""
    fenced = re.compile(r"```sh\n(.*?)\n```", re.S)
    readme = fenced.findall((REPO / "README.md").read_text(encoding="utf-8"))
    learners = fenced.findall((DOCS / "learners" / "index.md").read_text(encoding="utf-8"))
    assert readme[0] == learners[0] and "grader run" in readme[0]


def test_every_reader_has_a_page_in_the_site() -> None:
    import yaml

    config = yaml.safe_load((REPO / "mkdocs.yml").read_text(encoding="utf-8"))
    listed = re.findall(r"[\w/]+\.md", str(config["nav"]))
    for reader in READERS:
        assert f"{reader}/index.md" in listed and (DOCS / reader / "index.md").is_file(), reader
    assert sorted(listed) == sorted(str(page.relative_to(DOCS)) for page in DOCS.rglob("*.md"))


def test_the_pages_made_from_the_code_are_current() -> None:
    generate = docs_module("generate")
    assert generate.stale() == [], "run: python docs/generate.py"


def test_the_reference_names_every_key_every_parser_reads() -> None:
    """The tables the parsers check against are the reference's rows: a key parsed is a key documented."""
    from grader.course import cases, exercise, hints, mistakes, promises, scale_spec
    from grader.course.rules import settings

    reference = (DOCS / "instructors" / "reference.md").read_text(encoding="utf-8")
    for names in (exercise.KNOWN_KEYS, cases.GENERIC_KEYS, hints.KEYS, promises.KEYS, promises.RANGE_KEYS,
                  scale_spec.KEYS, settings.KEYS, mistakes.STRINGS):
        for name in names:
            assert f"| `{name}` |" in reference, name


def test_every_shell_transcript_is_written_so_that_it_runs() -> None:
    """A transcript is a ```console block; one fenced otherwise would escape being run and compared."""
    transcripts = docs_module("transcripts")
    wrong = []
    for page in sorted(DOCS.rglob("*.md")):
        lines = page.read_text(encoding="utf-8").splitlines()
        for number, line in enumerate(lines[:-1], start=1):
            fence = transcripts.FENCE.match(line)
            if fence and fence.group(3) != "console" and lines[number].startswith("$ "):
                wrong.append(f"{page.relative_to(REPO)}:{number}")
    assert wrong == []
    assert sum(1 for page in DOCS.rglob("*.md") for step in transcripts.steps(page) if step.expected is not None) > 20


def test_the_mask_hides_what_depends_on_the_machine_and_nothing_else(tmp_path) -> None:
    transcripts = docs_module("transcripts")
    printed = (f"sandbox (namespaces): pid, mount; as uid 204932\n{tmp_path}/exercises/x.py\n1.4 s\n"
               "Last run: 2026-12-02T05:41:54: 5 passed\nbackup 001-20261202T054156-softmax.py\n"
               "containment: no sandbox (off): Landlock\nmerge: course version 0123456789ab\n10 passed, 0 failed")
    assert transcripts.mask(printed, tmp_path).splitlines() == [
        "<containment>", "~/course/exercises/x.py", "<seconds>", "Last run: <time>: 5 passed",
        "backup 001-<stamp>-softmax.py", "containment: <containment>", "merge: course version <digest>",
        "10 passed, 0 failed"]
    assert transcripts.agrees(["a", "...", "z"], "a\nb\nc\nz", tmp_path)
    assert not transcripts.agrees(["a", "z"], "a\nb\nz", tmp_path)


def test_the_site_builds_strictly_offline(tmp_path) -> None:
    """Every page, link and anchor as mkdocs --strict accepts them, with nothing fetched while it builds."""
    if importlib.util.find_spec("mkdocs") is None or importlib.util.find_spec("material") is None:
        pytest.skip("mkdocs and mkdocs-material are not installed (pip install -e '.[docs]')")
    nowhere = "http://0.0.0.0:9"  # a fetch while building fails, rather than reach the network
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1", "HTTP_PROXY": nowhere, "HTTPS_PROXY": nowhere}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(tmp_path / "site")],
                          cwd=REPO, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stdout + done.stderr
    for reader in READERS:
        assert (tmp_path / "site" / reader / "index.html").is_file(), reader
    assert (tmp_path / "site" / "instructors" / "reference.html").is_file()
