"""The README and docs/ say what the results and the code say: every generated table and figure equals what
bench/tables.py writes from bench/results/, every relative link and anchor resolves inside the repository
(nothing points outside it: the normative protocol is docs/protocol.md), and every test the pages name
exists."""

from __future__ import annotations

import ast
import copy
import importlib.util
import re
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parent.parent
FENCE = re.compile(r"^(```|~~~).*?^\1\s*$", re.DOTALL | re.MULTILINE)
CODE_SPAN = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.DOTALL)
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.MULTILINE)
# A relative path in inline code, such as `../bench/gas.py`: a page may name files that way, not only link them.
PATH_SPAN = re.compile(r"`(\.\.?/[^`\s]+)`")
SCHEME = re.compile(r"[a-z][a-z0-9+.-]*:")  # https:, mailto: ...
TEST_REFERENCE = re.compile(r"(?:tests/)?((?:contracts/)?test_\w+\.py)::(test_\w+)")


def _tables() -> ModuleType:  # bench/ is scripts, not a package
    spec = importlib.util.spec_from_file_location("tables", REPO / "bench" / "tables.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PAGES = _tables().pages()
IDS = [str(p.relative_to(REPO)) for p in PAGES]


def _prose(text: str) -> str:
    """``text`` without fenced code blocks and inline code, where brackets and hashes are not markdown."""
    return CODE_SPAN.sub("", FENCE.sub("", text))


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (not - or _), spaces to hyphens."""
    text = re.sub(r"<[^>]+>", "", CODE_SPAN.sub(lambda m: m.group(0).strip("`"), heading))
    return re.sub(r"[^\w\- ]", "", text.strip().lower()).replace(" ", "-")


def anchors(page: Path) -> set[str]:
    """Every heading's anchor on ``page``, a repeated one numbered as GitHub does (x, x-1, x-2, ...)."""
    seen: dict[str, int] = {}
    found = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text())):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def test_the_pages_are_the_readme_and_every_docs_page() -> None:
    assert PAGES[0] == REPO / "README.md"
    assert {p.name for p in PAGES[1:]} >= {
        "evaluation.md",
        "benchmarks.md",
        "dispute-game.md",
        "operations.md",
        "api.md",
        "testing.md",
    }


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_tables_and_figures_are_written_from_bench_results(page: Path) -> None:
    text = page.read_text()
    assert _tables().render(text) == text, f"run `python bench/tables.py` and commit {page.name}"


def test_every_table_and_figure_is_on_a_page() -> None:
    tables = _tables()
    text = "".join(p.read_text() for p in PAGES)
    used = {m.group(2) for m in tables.BLOCK.finditer(text)}
    values = {m.group(2) for m in tables.VALUE.finditer(text)}
    assert used == set(tables.TABLES), "a table no page shows, or a block no function writes"
    assert values == set(tables.VALUES), "a figure no page uses, or a value no renderer writes"


def test_a_changed_result_changes_the_table() -> None:
    tables = _tables()
    block = "<!-- table:gas -->\n| stale | 1 |\n<!-- /table:gas -->"
    assert tables.render(block) != block and "| commitChallenge |" in tables.render(block)
    value = "the slowest p95: <!-- value:api_p95_verdict -->1 ms<!-- /value -->."
    assert "1 ms" not in tables.render(value) and tables.render(value).endswith("<!-- /value -->.")


def test_a_whole_system_run_with_an_honest_failure_is_reported_as_failing() -> None:
    tables = _tables()
    result = copy.deepcopy(tables.load("e2e_vision_tiny.json"))
    result["rows"][-1]["honest_replays_failed"] = 1
    tables.load = lambda name: result  # the e2e renderers read only this result
    rows = tables.e2e().splitlines()[2:]
    assert rows and all("not a cost" in row for row in rows)
    assert "**1 of" in rows[-1]
    assert tables.e2e_verdict(short=False).startswith("**This run failed**")
    assert "not yet a cost" in tables.e2e_verdict(short=True)


def test_only_a_measured_undisturbed_cost_meets_or_misses_its_target() -> None:
    """Issue 48: a figure composed from measured parts, or taken while other work used the machine, is labelled
    so and never called met; the headline on SmolLM2 is composed, and says so."""
    verdict = _tables().target_verdict
    assert verdict(1.05, 1.10, disturbed=False, composed=False) == "met"
    assert verdict(1.15, 1.10, disturbed=False, composed=False) == "**missed**"
    assert verdict(1.05, 1.10, disturbed=False, composed=True) == (
        "not judged: composed from measured parts, not measured on the running system"
    )
    for composed in (False, True):
        assert verdict(1.05, 1.10, disturbed=True, composed=composed).startswith("**not measured yet**")
    headline = _tables().e2e_llm_target()
    assert "composed" in headline and ": met" not in headline


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_relative_links_point_to_files_and_headings_that_exist(page: Path) -> None:
    broken = []
    for target in LINK.findall(_prose(page.read_text())):
        if SCHEME.match(target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.is_relative_to(REPO):
            broken.append(f"{target}: outside the repository")
            continue
        if not file.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (file.suffix != ".md" or anchor not in anchors(file)):
            broken.append(f"{target}: no heading #{anchor} in {file.relative_to(REPO)}")
    assert not broken, f"{page.name}: {broken}"


def outside_targets(text: str, folder: Path) -> list[str]:
    """What a page's ``text`` (the page in ``folder``) points to outside the repository: every link target that
    resolves outside it, and every relative path in inline code that is not a file or folder of it (a path
    written from the repository's parent, such as `../elsewhere/x`, resolves inside and names nothing)."""

    def inside(target: str, *, named: bool) -> bool:
        file = (folder / target.partition("#")[0]).resolve()
        return file.is_relative_to(REPO) and (file.exists() or not named)

    links = [t for t in LINK.findall(_prose(text)) if not SCHEME.match(t)]
    paths = PATH_SPAN.findall(FENCE.sub("", text))
    return [t for t in links if not inside(t, named=False)] + [t for t in paths if not inside(t, named=True)]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_no_page_points_outside_the_repository(page: Path) -> None:
    outside = outside_targets(page.read_text(), page.parent)
    assert not outside, f"{page.name} points outside the repository: {outside}"


def test_the_outside_check_sees_links_and_paths_in_code() -> None:
    text = (
        "[p](../../elsewhere/protocol.md) `../../elsewhere/x.txt` `../elsewhere/papers/x.txt` [q](protocol.md) "
        "`../bench/gas.py` [w](https://x.org)"
    )
    assert outside_targets(text, REPO / "docs") == [
        "../../elsewhere/protocol.md",
        "../../elsewhere/x.txt",
        "../elsewhere/papers/x.txt",
    ]


def test_the_link_check_sees_what_github_renders(tmp_path: Path) -> None:
    page = tmp_path / "p.md"
    page.write_text("# Contracts: the `state` machines\n## Gas\n## Gas\n```\n# not a heading\n```\n")
    assert anchors(page) == {"contracts-the-state-machines", "gas", "gas-1"}
    assert LINK.findall(_prose("[a](x.md#y) `[b](code.md)` ![c](d.png)")) == ["x.md#y", "d.png"]


@pytest.mark.parametrize("page", PAGES, ids=IDS)
def test_every_test_the_page_names_exists(page: Path) -> None:
    missing = []
    for file, name in TEST_REFERENCE.findall(page.read_text()):
        candidates = [REPO / "tests" / file] if "/" in file else sorted((REPO / "tests").rglob(file))
        defined = {
            node.name
            for path in candidates
            if path.is_file()
            for node in ast.walk(ast.parse(path.read_text()))
            if isinstance(node, ast.FunctionDef)
        }
        if name not in defined:
            missing.append(f"{file}::{name}")
    assert not missing, f"{page.name} names tests that do not exist: {missing}"


def test_the_real_models_projection_and_target_come_from_its_measured_parts() -> None:
    tables = _tables()
    # 100 steps of 3 s; at s = 100 one evidence file written in 3 s and one sampled interval replayed in 400 s
    row = {
        "stride": 100,
        "intervals": 1,
        "sampled": 1,
        "plain_s": 300.0,
        "evidence_s": 303.0,
        "evidence_write_s": 3.0,
        "replay_s_per_interval": 400.0,
        "evidence_file_bytes": 6e6,
        "honest_replays_failed": 0,
        "overhead_at_phi": {"0.05": 1.08, "0.1": 1.14},
    }
    machine = {"loadavg_before": [0.1, 0.1, 0.1], "loadavg_after": [1.0, 0.5, 0.2]}  # this run's one thread
    tables.load = lambda name: {"args": {"steps": 100}, "rows": [row], "machine": machine}
    projected = tables.e2e_llm_rows()[-1]
    # s = 1000: 1 + 3 / (1000 x 3) of evidence, and phi x (400 / 100 s a step) / 3 s a step of replays
    assert projected["stride"] == 1000 and projected["projected"]
    assert projected["training_ratio"] == 1.001
    assert abs(projected["overhead_at_phi"]["0.05"] - (1.001 + 0.05 * 4 / 3)) < 1e-12
    # composed from the run's parts (issue 48): labelled so, and judged by nothing
    assert tables.e2e_llm_target() == (
        "1.080x at s = 100, phi = 0.05, composed as evidence / plain + phi x K x replay / plain (target: at most "
        "1.10x): not judged: composed from measured parts, not measured on the running system"
    )
    row["honest_replays_failed"] = 1  # an honest interval judged faulty fails the run, whatever its cost
    assert tables.e2e_llm_target().endswith("**missed**: 1 honest replays failed")
    row["honest_replays_failed"], row["overhead_at_phi"]["0.05"] = 0, 1.2
    assert tables.e2e_llm_target().endswith(
        "not judged: composed from measured parts, not measured on the running system"
    )
    # 30 s more than plain training plus 3 s of writing evidence: 10% of plain training is other work
    row["evidence_s"] = 333.0
    assert ": **not measured yet**: disturbed" in tables.e2e_llm_target()
    assert "**disturbed**: +10% of plain training unexplained; load average 1.0" in tables.e2e_llm()
    # ... and so is a busy machine, even where the runs' difference is what their evidence took
    row["evidence_s"], machine["loadavg_before"][0] = 303.0, 1.7
    assert ": **not measured yet**: disturbed" in tables.e2e_llm_target()
