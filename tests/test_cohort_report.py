"""The cohort's similarity report, each learner's feedback file and report.html, from results files built here."""

from __future__ import annotations

import csv
import hashlib
import html
import io
import json
import re
import shutil
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import REPO

from grader.results.cohort import load_entries
from grader.report.similarity_report import similar_to
from grader.results.similarity import THRESHOLD, TOKEN_LIMIT, compare
from grader.staff import gradebook
from grader.staff.fingerprints import code_prints, fingerprints, given_code, tokens

RING = REPO / "exercises/07-ring-attention"
RING_SOLUTIONS = REPO / "solutions/07-ring-attention"
HOSTILE = "<script>alert('x')</script>\x1b[31m **bold** [link](http://example.org)"
LONG_MISTAKE = ("Rescales the accumulator by the chunk's factor exp(chunk_max - new_max) instead of its own "
                "factor exp(acc_max - new_max), so that merges against a larger max drift")


def given() -> list[bytes]:
    return given_code([RING / "ring_attention.py", RING / "starter/ring_attention.py"])


def renamed(source: str) -> str:
    """A copy as a copier makes one: every variable renamed, comments and docstrings reworded, lines rejoined."""
    for old, new in (("scores", "s"), ("chunk_max", "m_c"), ("weights", "w"), ("new_max", "mx"),
                     ("acc_scale", "a_s"), ("total", "denominator"), ("running_max", "rmax"), ("stats", "st"),
                     ("scale", "sc"), ("query", "q"), ("key_chunk", "kc")):
        source = re.sub(rf"\b{old}\b", new, source)
    source = re.sub(r"#.*", "# my own idea", source).replace('"""Reference solution', '"""My solution')
    return source.replace("(\n    query", "(q").replace("\n\n\n", "\n\n")


class Fingerprinted:
    def __init__(self, name: str, source: str) -> None:
        self.id = name
        self.sha256 = hashlib.sha256(source.encode()).hexdigest()
        prints = code_prints(source.encode(), given())
        self.fingerprints, self.fingerprints_cut = tuple(prints.values), prints.cut


def test_normalising_drops_comments_docstrings_and_own_names_and_keeps_the_api():
    normal = tokens(b'import torch\n\ndef f(x, dim=1):\n    """doc"""\n    y = torch.exp(x).sum(dim=dim)  # c\n'
                    b'    return f"{y}" + "a"\n')
    assert normal == ["import", "torch", "<newline>", "def", "V", "(", "V", ",", "V", "=", "1", ")", ":", "<newline>",
                      "<indent>", "V", "=", "torch", ".", "exp", "(", "V", ")", ".", "sum", "(", "dim", "=", "V", ")",
                      "<newline>", "return", "S", "+", "S", "<newline>", "<dedent>"]
    # What every learner is given has no fingerprint of its own: an untouched stub matches nobody.
    assert fingerprints((RING / "ring_attention.py").read_bytes(), given()) == []
    # A file that does not parse, or not even tokenize to its end, still has fingerprints of what it has.
    assert fingerprints(b"def f(x)\n    return [x + 1 for y in range(10) if x > y] + [x * 2, x * 3, x * 4]\n'open")


def test_only_the_first_tokens_of_code_are_fingerprinted_and_a_file_cut_so_says_it():
    body = b"".join(b"def f%d(a, b):\n    c = a + b * %d\n    return torch.exp(c).sum(dim=-1)\n\n" % (n, n)
                    for n in range(1200))
    assert len(tokens(body)) > TOKEN_LIMIT  # what a hostile 2 MiB file would cost is bounded so
    assert fingerprints(body + b"x = 1\n" * 50) == fingerprints(body + b"y = [2, 3]\n" * 50)
    assert fingerprints(body[:30_000] + b"x = 1\n" * 50) != fingerprints(body[:30_000] + b"y = [2, 3]\n" * 50)
    assert code_prints(body).cut and not code_prints(body[:30_000]).cut


@pytest.mark.parametrize("padding", [
    b"# " + b"x" * 78 + b"\n",                     # comments
    b"\n",                                         # blank lines
    b'"""' + b"y" * 60 + b'"""\n',                 # docstrings, one a line
    b'"""\n' + b"z" * 70 + b'\n"""\n',             # docstrings over several lines
])
def test_a_copy_behind_any_amount_of_comments_docstrings_and_blank_lines_is_found(padding):
    reference = (RING_SOLUTIONS / "ring_attention.py").read_bytes()
    padded = padding * (1 + (256 << 10) // len(padding)) + reference  # far past what a cut by bytes would keep
    assert code_prints(padded, given()) == code_prints(reference, given())


def test_a_file_too_small_or_compared_in_part_is_named_never_left_out():
    reference = (RING_SOLUTIONS / "ring_attention.py").read_text()
    long = "".join(f"def helper_{n}(a, b):\n    return torch.exp(a * {n} + b).sum(dim=-1)\n\n" for n in range(1500))
    entries = [Fingerprinted("ada", reference), Fingerprinted("ben", reference + "\n" + long),
               Fingerprinted("cyd", (RING / "ring_attention.py").read_text()), Fingerprinted("dee", reference)]
    found = compare(entries)
    assert found.too_small == ["cyd"] and found.in_part == ["ben"] and found.compared == 3
    cells = similar_to(found)
    assert cells["cyd"] == "not compared: too little code of its own"
    assert cells["ben"].endswith(f"compared on its first {TOKEN_LIMIT:,} tokens of code only")
    assert "dee (100%)" in cells["ada"]


def test_copies_are_flagged_and_independent_solutions_are_not():
    reference = (RING_SOLUTIONS / "ring_attention.py").read_text()
    other = (RING_SOLUTIONS / "variants/log_sum_exp.py").read_text()
    entries = [Fingerprinted(f"copy{number}", reference) for number in range(1, 5)]
    entries += [Fingerprinted("lse", other), Fingerprinted("lse-renamed", renamed(other)),
                Fingerprinted("einsum", (RING_SOLUTIONS / "variants/einsum.py").read_text()),
                Fingerprinted("stub", (RING / "ring_attention.py").read_text())]
    assert renamed(other) != other and len(entries[0].fingerprints) > 20
    found = compare(entries)
    # Four byte-identical copies: one cluster of four, every pair identical; the renamed copy: a cluster with
    # its original; the einsum variant, the reference with one function rewritten, is in neither.
    assert [cluster.members for cluster in found.clusters] == [("copy1", "copy2", "copy3", "copy4"),
                                                               ("lse", "lse-renamed")]
    assert found.clusters[0].identical and len(found.clusters[0].pairs) == 6
    assert not found.clusters[1].identical and found.clusters[1].pairs[0].similarity == 1.0
    einsum = [pair for pair in found.pairs if "einsum" in (pair.first, pair.second)]
    assert einsum and all(not pair.flagged for pair in einsum) and max(p.similarity for p in einsum) < THRESHOLD
    assert found.similar_to("copy2") == [("copy1", 1.0), ("copy3", 1.0), ("copy4", 1.0)]
    assert found.compared == 7  # the untouched stub is compared with nothing


@pytest.mark.parametrize("exercise", ["01-stable-softmax", "06-tensor-parallel-matmul", "07-ring-attention"])
def test_no_two_correct_solutions_of_the_course_are_flagged(exercise):
    folder = REPO / "solutions" / exercise
    stub = next(folder.glob("*.py")).name
    files = [folder / stub, *sorted((folder / "variants").glob("*.py"))]
    starts = given_code([REPO / "exercises" / exercise / stub, REPO / "exercises" / exercise / "starter" / stub])

    class Solution:
        def __init__(self, path: Path) -> None:
            self.id, self.sha256 = path.stem, hashlib.sha256(path.read_bytes()).hexdigest()
            self.fingerprints, self.fingerprints_cut = tuple(fingerprints(path.read_bytes(), starts)), False

    assert compare([Solution(path) for path in files]).clusters == []


def _test(case: str, function: str, suite: str, outcome: str, message: str = "", output: str = "",
          mistake: tuple[str, str, str] | None = None, required: bool = False, score: float = 1.0) -> dict:
    diagnosis = {"mistake": "m", "title": mistake[0], "rationale": mistake[1], "help": mistake[2]} if mistake else None
    passed = outcome == "passed"
    return {"name": f"{case} [cpu]", "score": score if passed else 0.0, "max_score": score,
            "status": "passed" if passed else "failed", "output": output or outcome,
            "extra_data": {"case": case, "outcome": outcome, "suite": suite, "device": "cpu", "function": function,
                           "message": message, "diagnosis": diagnosis, "required": required, "points": 1.0}}


def write_results(out: Path, submission: str, tests: list[dict], status: str, source: str | None = None,
                  name: str | None = None, reason: str = "") -> None:
    """A results file as `grader grade` writes it, for a file of `source` (None: nothing was read)."""
    data = source.encode() if source is not None else b""
    about = {"id": submission, "name": name or submission, "key": "k", "reason": reason,
             "settings": {"exercise": "07-ring-attention"},
             "sha256": hashlib.sha256(data).hexdigest() if source is not None else ""}
    if source is not None:
        about["fingerprints"] = fingerprints(data, given())
    score = 0.0 if status in ("error", "not graded") or any(
        t["extra_data"]["required"] and t["status"] == "failed" for t in tests) else sum(t["score"] for t in tests)
    report = {"score": score, "tests": tests, "output": "", "extra_data": {
        "status": status, "max_score": float(len(tests) or 10), "exercise": "07-ring-attention", "submission": about}}
    (out / "results").mkdir(parents=True, exist_ok=True)
    (out / "results" / f"{submission}.json").write_text(json.dumps(report))


def cohort(out: Path, learners: int = 4) -> Path:
    """A gradebook's results: the reference four times, a renamed copy, a mistake with a visible and a hidden
    failure, one seen in hidden cases only, a file that did not import, one not graded, and `learners` more."""
    reference = (RING_SOLUTIONS / "ring_attention.py").read_text()
    cases = [(f"{function}-{suite}-{number}", function, suite) for function in
             ("attention_chunk_stats", "merge_chunk_stats", "ring_attention") for suite in ("examples", "hidden")
             for number in range(1, 9 if suite == "hidden" else 3)]

    def everything(fail: dict[str, dict]) -> list[dict]:
        return [fail.get(case) or _test(case, function, suite, "passed") for case, function, suite in cases]

    for name in ("ada", "ben", "cyd", "dee"):
        write_results(out, name, everything({}), "passed", reference)
    write_results(out, "eve", everything({}), "passed", renamed(reference))
    visible = _test("merge_chunk_stats-examples-1", "merge_chunk_stats", "examples", "failed", "output is wrong",
                    "failed: output is wrong\nchecks: the accumulator has the larger max\ninputs: acc (2, 3)\n"
                    f"likely mistake: {LONG_MISTAKE}. Multiply each side by its own factor.",
                    (LONG_MISTAKE, "The merge mixes up the two factors.", "Multiply each side by its own factor."))
    hidden = _test("merge_chunk_stats-hidden-2", "merge_chunk_stats", "hidden", "failed", "output is wrong: NaN",
                   "failed: output is wrong: NaN\nlikely mistake: Every value is NaN. Guard the -inf max.",
                   ("Every value is NaN", "SECRET RATIONALE of a hidden case", "SECRET HELP of a hidden case"),
                   required=True)
    write_results(out, "fay", everything({visible["extra_data"]["case"]: visible, hidden["extra_data"]["case"]: hidden}),
                  "failed", (RING_SOLUTIONS / "variants/einsum.py").read_text(), name=HOSTILE + ".py")
    write_results(out, "gus", everything({hidden["extra_data"]["case"]: hidden}), "failed",
                  (RING_SOLUTIONS / "variants/log_sum_exp.py").read_text())
    broken = [_test(case, function, suite, "error", "gus.py:3: your file could not be imported: SyntaxError")
              for case, function, suite in cases]
    write_results(out, "hal", broken, "error", "def ring_attention(q, k, v)\n    return q\n")
    write_results(out, "ivy", [], "not graded", None, reason="not a Python file (.txt)")
    variants = sorted(path for path in (RING_SOLUTIONS / "variants").glob("*.py")
                      if path.stem not in ("einsum", "log_sum_exp"))  # fay's and gus's files
    for number in range(learners):
        fail = {case: _test(case, function, suite, "failed", "output is wrong", mistake=("Normalizes each chunk "
                            "before merging", "why", "help") if number % 2 else None)
                for index, (case, function, suite) in enumerate(cases) if (index + number) % 5 == 0}
        write_results(out, f"learner-{number:02d}", everything(fail), "failed",
                      variants[number % len(variants)].read_text() + f"\n# {number}\n")
    return out


def test_the_gradebook_has_the_similarity_report_and_a_column_of_grades_csv(tmp_path):
    book = cohort(tmp_path / "book")
    gradebook.write_gradebook(book, load_entries(book))
    with open(book / "grades.csv", newline="") as handle:
        rows = {row["submission"]: row for row in csv.DictReader(handle)}
    assert list(rows["ada"])[-1] == "similar_to"
    assert rows["ada"]["similar_to"] == "ben, cyd, dee, eve (100%)"
    assert rows["eve"]["similar_to"] == "ada, ben, cyd, dee (100%)"
    assert rows["fay"]["similar_to"] == rows["ivy"]["similar_to"] == ""
    assert rows["hal"]["similar_to"] == "not compared: too little code of its own"  # two lines of its own
    pairs = list(csv.DictReader(io.StringIO((book / "similarity.csv").read_text())))
    assert pairs[0] == {"cluster": "1", "first": "ada", "second": "ben", "similarity": "100%",
                        "shared_fingerprints": pairs[0]["shared_fingerprints"], "identical": "yes", "flagged": "yes"}
    assert {(row["first"], row["second"]) for row in pairs if row["flagged"] == "yes"} == {
        (a, b) for a in ("ada", "ben", "cyd", "dee", "eve") for b in ("ada", "ben", "cyd", "dee", "eve") if a < b}
    page = (book / "report.html").read_text()
    section = page[page.index('id="similar"'):page.index('id="cases"')]
    # One row per cluster, each submission linked to its row of the table (which links its feedback file).
    assert section.count("<tr><td") == 1
    assert '<td class="number">1</td><td>5: <a href="#entry-ada">ada</a>, <a href="#entry-ben">ben</a>' in section
    assert "<td>100%</td><td><details><summary>10 pairs</summary>" in section
    assert "<p>Not compared, with too little code of their own: hal.</p>" in section
    assert 'id="entry-eve"><td class="id"><a href="feedback/eve.html">eve</a>' in page
    # A rerun over the same results writes the same bytes, feedback files included.
    before = {path: path.read_bytes() for path in book.rglob("*") if path.is_file()}
    gradebook.write_gradebook(book, load_entries(book))
    assert {path: path.read_bytes() for path in book.rglob("*") if path.is_file()} == before


def test_each_learner_has_a_feedback_file_that_shows_only_what_they_may_see(tmp_path):
    book = cohort(tmp_path / "book", learners=0)
    gradebook.write_gradebook(book, load_entries(book))
    assert sorted(path.name for path in (book / "feedback").iterdir()) == sorted(
        f"{name}.{kind}" for name in ("ada", "ben", "cyd", "dee", "eve", "fay", "gus", "hal", "ivy")
        for kind in ("md", "html"))
    fay = (book / "feedback/fay.md").read_text()
    assert "**Score:** 0 of 30 (failed)" in fay and "| hidden | 23/24 |" in fay
    assert "A hidden case is required for acceptance and it failed on its values (output is wrong), so the score is 0" \
        in fay
    # The failures grouped by cause (here their messages' first clause: these files name none), each once: the
    # visible one shown with its verdict, checks and inputs; its mistake named with why and help, once.
    assert "## Failed cases (2)\n\n### merge\\_chunk\\_stats: output is wrong (2 cases)" in fay
    assert "**Verdict:** failed: output is wrong" in fay and "checks: the accumulator has the larger max" in fay
    assert "**Why:** The merge mixes up the two factors." in fay and fay.count("Multiply each side") == 1
    # The hidden failure: counted under it; its mistake named, without the why and help it has.
    assert "**Also:** 1 hidden case" in fay and "merge\\_chunk\\_stats-hidden-2" not in fay
    assert "**Hidden cases suggest:** Every value is NaN (1 hidden case). Stuck? grader hint" in fay
    assert "SECRET" not in fay and "SECRET" not in (book / "feedback/fay.html").read_text()
    # The learner's file name is text, in Markdown and in HTML alike.
    assert "\\<script\\>alert('x')\\</script\\>\\\\x1b\\[31m \\*\\*bold\\*\\* \\[link\\](http://example.org)" in fay
    page = (book / "feedback/fay.html").read_text()
    assert "<script" not in page and "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;\\x1b[31m" in page
    assert "\x1b" not in fay + page
    assert "Every test passes." in (book / "feedback/ada.md").read_text()
    hal = (book / "feedback/hal.md").read_text()
    assert "could not be imported, so none of its 30 cases ran" in hal and hal.count("SyntaxError") == 1
    assert "**Not graded:** not a Python file (.txt)" in (book / "feedback/ivy.md").read_text()


def test_the_report_puts_the_summary_and_mistakes_first_and_groups_the_cases(tmp_path):
    book = cohort(tmp_path / "book", learners=6)
    gradebook.write_gradebook(book, load_entries(book))
    page = (book / "report.html").read_text()
    order = [page.index(marker) for marker in ("<h2>Summary</h2>", "<h2>Scores</h2>", "Mistakes most often",
                                               'id="similar"', 'id="cases"', 'id="submissions"')]
    assert order == sorted(order)
    assert "15 submissions" in page and "5 submissions in 1 cluster</a> flagged as alike" in page
    assert f'<td class="label">{html.escape(LONG_MISTAKE)}</td>' in page  # whole, never cut: the browser wraps it
    assert "more characters]" not in page
    # Groups by function and suite, the lowest pass rate first; each group's tail folded.
    cases = page[page.index('id="cases"'):page.index('id="submissions"')]
    groups = re.findall(r"<strong>(\w+) &middot; (\w+)</strong>", cases)
    assert sorted(groups) == [(function, suite) for function in ("attention_chunk_stats", "merge_chunk_stats",
                                                                 "ring_attention") for suite in ("examples", "hidden")]
    # One folded line per group, naming its worst case; inside, every case, worst first, those all passed folded.
    lowest = []
    for group in cases.split('<details class="group">')[1:]:
        worst = re.search(r"lowest (\d+)%: ([\w-]+ \[cpu\])", group)
        rates = [int(rate) for rate in re.findall(r"\((\d+)%\)</td>", group)]
        assert worst and int(worst[1]) == rates[0] == min(rates) and f'<td class="label">{worst[2]}</td>' in group
        assert rates == sorted(rates)
        lowest.append(rates[0])
    assert lowest == sorted(lowest) and lowest[0] < 100
    # Every submission's row links to its feedback file, which is there.
    for link in re.findall(r'<td class="id"><a href="(feedback/[^"]+)">', page):
        assert (book / link).is_file()
    assert len(re.findall(r'<td class="id"><a href="feedback/', page)) == 15
    # Nothing runs or loads: no script, and every link is to this page or a feedback file beside it.
    assert "<script" not in page and "src=" not in page and not re.search(r'href="(?!#|feedback/)', page)


def test_a_feedback_file_is_named_inside_feedback_whatever_the_id(tmp_path):
    from grader.report.feedback import feedback_link, file_name

    assert [file_name(name) for name in ("alice.py", "../x", "a/b", ".hidden", "")] == [
        "alice.py", "%2E.%2Fx", "a%2Fb", "%2Ehidden", "%2E"]
    assert feedback_link("a/b") == "feedback/a%252Fb.html"
    book = tmp_path / "book"
    write_results(book, "bob", [_test("c", "f", "examples", "passed")], "passed", "x = 1\n")
    entries = load_entries(book)
    entries[0].id = "../../escaped"
    gradebook.write_gradebook(book, entries)
    assert not (tmp_path / "escaped.md").exists() and (book / "feedback/%2E.%2F..%2Fescaped.md").is_file()


def _png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n", path
    return struct.unpack(">II", data[16:24])


@pytest.mark.skipif(not (shutil.which("chromium") or shutil.which("chromium-browser")),
                    reason="no chromium here (apt-get install chromium)")
def test_the_report_in_a_real_browser_at_two_widths(tmp_path, tmp_path_factory):
    book = cohort(tmp_path / "book", learners=12)
    gradebook.write_gradebook(book, load_entries(book))
    shots = tmp_path_factory.mktemp("screenshots")
    browser = shutil.which("chromium") or shutil.which("chromium-browser")
    for width in (1400, 800):
        shot = shots / f"report-{width}.png"
        subprocess.run([browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars",
                        f"--user-data-dir={tmp_path / 'profile'}", f"--screenshot={shot}",
                        f"--window-size={width},1000", (book / "report.html").as_uri()],
                       check=True, capture_output=True, timeout=120)
        assert _png_size(shot) == (width, 1000) and shot.stat().st_size > 20_000
    print(f"screenshots in {shots}")
