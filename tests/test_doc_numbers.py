"""Every number a reference page quotes comes from the code or from a recorded run.

``tools/docnumbers.py`` computes the facts (model counts from ``tla.models.discover``, the
``Target`` implementations, the scheduler's programs, the README's reading orders; state
counts, depths and seconds from the recorded TLC runs in ``docs/runs/``; the checks' timings;
the mutation run's record) and the pages mark each number they quote with its fact,
``27<!-- =models.default -->``, or quote a whole table as a generated block. These tests fail
when a page disagrees with its source, when a recorded run no longer covers the models that
exist, when a page quotes a run time or a model count without a source, and when a reference
page carries project history (that belongs in ``CHANGELOG.md``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import pytest

import tools.docnumbers as docnumbers
from tla.models import discover

ROOT: Final = Path(__file__).resolve().parents[1]
DOCS: Final = ROOT / "docs"

#: The reference pages whose every run time and model count must be marked with its source.
SOURCED_PAGES: Final = (
    "tla.md",
    "levels.md",
    "mutation.md",
    "mutation-survivors.md",
    "testing.md",
    "schedule.md",
    "crosshair.md",
    "linearizability.md",
    "failure-model.md",
    "index.md",
    "benchmarks.md",
    # The learner's pages and the other pages a user reads.
    "tla-primer.md",
    "walkthrough.md",
    "pitfalls.md",
    "exercises.md",
    "contract.md",
    "sources.md",
    "api.md",
    "install.md",
    "explorer.md",
    "compared.md",
    "conformance-ci.md",
)


def test_every_marked_number_and_block_is_its_fact() -> None:
    known = docnumbers.facts()
    found = [
        f"{page.relative_to(ROOT)}: {problem}"
        for page in docnumbers.pages()
        for problem in docnumbers.problems(page.read_text(), known)
    ]
    assert not found, "run `python -m tools.docnumbers` to regenerate:\n" + "\n".join(found)


def test_the_pages_mark_numbers_at_all() -> None:
    # The check above is vacuous if no page marks anything.
    text = "".join(p.read_text() for p in docnumbers.pages())
    keys = {m.group(2) for m in docnumbers.MARK.finditer(text)}
    assert {"models.default", "tlc.run.seconds", "targets", "readme.orders"} <= keys
    assert len(list(docnumbers.BLOCK.finditer(text))) >= 5


def test_a_number_that_disagrees_with_its_fact_is_reported() -> None:
    known = {"n": "27", "big": "16518", "t": "9.4"}
    assert (
        docnumbers.problems("27<!-- =n --> and 16,518<!-- =big --> in 9.4<!-- =t --> s", known)
        == []
    )
    assert docnumbers.problems("twenty-seven<!-- =n --> models", known) == []
    assert docnumbers.problems("26<!-- =n -->", known) == ["26: n is 27"]
    assert docnumbers.problems("nine<!-- =n -->", known) == ["nine: n is 27"]
    assert docnumbers.problems("16,519<!-- =big -->", known) == ["16,519: big is 16518"]
    assert docnumbers.problems("9.5<!-- =t -->", known) == ["9.5: t is 9.4"]
    assert docnumbers.problems("3<!-- =missing -->", known) == ["3: no fact 'missing'"]


def test_rewriting_keeps_the_style_of_each_number() -> None:
    known = {"n": "27", "big": "16518", "small": "4"}
    text = "0<!-- =n -->, 1,000<!-- =big -->, three<!-- =small -->"
    assert (
        docnumbers.rewrite(text, known) == "27<!-- =n -->, 16,518<!-- =big -->, four<!-- =small -->"
    )


def test_a_stale_generated_block_is_reported() -> None:
    fresh = docnumbers.rewrite(
        "<!-- begin: crosshair-contracts --><!-- end: crosshair-contracts -->", {}
    )
    assert "`send_contract`" in fresh
    assert docnumbers.problems(fresh, {}) == []
    stale = fresh.replace("`send_contract`, ", "")
    assert docnumbers.problems(stale, {}) == ["block 'crosshair-contracts' is stale"]
    assert docnumbers.problems("<!-- begin: nosuch --><!-- end: nosuch -->", {}) == [
        "\"no generated block named 'nosuch'\""
    ]


def test_number_words() -> None:
    assert [docnumbers.number_word(n) for n in (0, 4, 11, 20, 27, 99)] == [
        "zero",
        "four",
        "eleven",
        "twenty",
        "twenty-seven",
        "ninety-nine",
    ]
    with pytest.raises(ValueError, match=r"^number_word: n must be 0 to 99"):
        docnumbers.number_word(100)


def test_the_recorded_tla_runs_cover_every_model_with_its_expected_outcome() -> None:
    run = docnumbers.read_run(docnumbers.TLA_RUN)
    large = docnumbers.read_run(docnumbers.TLA_LARGE_RUN)
    default = {m.name: m for m in discover()}
    larger = {m.name: m for m in discover(large=True) if m.large}
    assert set(run.rows) == set(default), "re-record docs/runs/tla.txt: the models changed"
    assert set(large.rows) == set(larger), "re-record docs/runs/tla-large.txt"
    assert run.models == len(default)
    for name, row in {**run.rows, **large.rows}.items():
        model = {**default, **larger}[name]
        assert row.cells[1] == model.expected, f"{name}: recorded as expecting {row.cells[1]}"
        assert row.cells[2].split(" ")[0] == model.expect, f"{name}: recorded {row.cells[2]}"


def test_a_recorded_run_without_its_table_is_an_error(tmp_path: Path) -> None:
    bad = tmp_path / "run.txt"
    bad.write_text("# header only\n")
    with pytest.raises(ValueError, match=r"run\.txt: no table"):
        docnumbers.read_run(bad)


def _table_models(text: str) -> list[tuple[str, bool]]:
    """The models named in the first column of ``text``'s tables: (name, marked "(fails)")."""
    found = []
    for line in text.splitlines():
        if line.startswith("| `"):
            first = line.split(" | ")[0]
            found += [
                (m.group(1), bool(m.group(2)))
                for m in re.finditer(r"`([\w.]+)`( \(fails\))?", first)
            ]
    return found


def test_testing_md_names_every_model_and_marks_exactly_those_that_fail() -> None:
    text = (DOCS / "testing.md").read_text()
    table = text.partition("| model | what it shows |")[2].partition("\n\n")[0]
    named = dict(_table_models(table))
    models = {m.name: m.expect == "violation" for m in discover(large=True)}
    assert named == models


def test_tla_and_levels_table_every_model() -> None:
    text = (DOCS / "tla.md").read_text() + (DOCS / "levels.md").read_text()
    named = {name for name, _ in _table_models(text)}
    missing = {m.name for m in discover(large=True)} - named
    assert not missing, f"models in no table of tla.md or levels.md: {sorted(missing)}"


def test_the_readme_has_reading_orders_the_index_can_name() -> None:
    orders = docnumbers.readme_orders()
    assert len(orders) >= 2, orders
    index = (DOCS / "index.md").read_text()
    for order in orders:
        assert order[0].lower() + order[1:] in index


def _prose(text: str) -> str:
    """``text`` without its fenced code and its generated blocks."""
    text = re.sub(r"```.*?```", "", text, flags=re.DOTALL)
    return docnumbers.BLOCK.sub("", text)


#: A run time typed into prose: a number right before its unit (a marked one has its comment
#: between the two).
_TIMING: Final = re.compile(
    r"\b\d[\d,]*(?:\.\d+)?(?:-\d+(?:\.\d+)?)? ?(?:s|ms|seconds|minutes|min)\b"
)
#: A count of models typed into prose.
_MODELS: Final = re.compile(
    r"\b(?:\d+|" + "|".join(docnumbers.number_word(n) for n in range(2, 40)) + r")"
    r" (?:default |abstract |threaded |teaching )?models\b",
    flags=re.IGNORECASE,
)
#: Times that are not measurements but settings of the code or a command, by page.
_SETTINGS: Final = {
    "crosshair.md": ("15 s",),  # --per_condition_timeout=15
    "mutation.md": ("0.05 s",),  # PollingSweeperQueue's poll
    "mutation-survivors.md": ("11 s", "10 s"),  # wait_for_waiters' bound, and the mutant's
    "failure-model.md": ("10 ms", "1 s"),  # impl.sweeper.backoff's first and last step
    # Parameters and documented limits, not measurements: the demo's visibility timeout, the
    # dedup interval, a polling mutant's period, and SQS's, moto's and kombu's documented limits
    # and defaults, each quoted with its source on the page.
    "walkthrough.md": ("0.3 s", "300 s"),
    "pitfalls.md": ("50 ms", "0.05 s"),
    "contract.md": ("60 seconds", "900 s"),
    "compared.md": (
        *("10 seconds", "200 s", "3600 s", "20 s", "900 s", "60 seconds", "60 s", "300 s"),
        "5 minutes",
    ),
}


@pytest.mark.parametrize("name", SOURCED_PAGES)
def test_run_times_and_model_counts_are_marked_with_their_source(name: str) -> None:
    prose = _prose((DOCS / name).read_text())
    timings = [t for t in _TIMING.findall(prose) if t not in _SETTINGS.get(name, ())]
    assert not timings, f"{name}: run times without a recorded run: {timings}"
    counts = _MODELS.findall(prose)
    assert not counts, f"{name}: model counts not marked with their source: {counts}"


#: Project history: an issue number, or a range of them.
_HISTORY: Final = re.compile(r"\bissues? ?#?\d+(?:\s*[-–]\s*\d+)?\b|\bissue-\d+", re.IGNORECASE)


def _reference_pages() -> list[Path]:
    return [*sorted(DOCS.glob("*.md")), ROOT / "README.md", ROOT / "CONTRIBUTING.md"]


@pytest.mark.parametrize("page", _reference_pages(), ids=lambda p: p.name)
def test_reference_pages_carry_no_project_history(page: Path) -> None:
    found = _HISTORY.findall(page.read_text())
    assert not found, f"{page.name}: project history belongs in CHANGELOG.md: {found}"


def test_the_history_check_sees_issue_numbers() -> None:
    assert _HISTORY.findall("the CI run of issues 16-18, since issue 14, issue-22's") == [
        "issues 16-18",
        "issue 14",
        "issue-22",
    ]
    assert _HISTORY.findall("an issue with the lock; 14 issues") == []


def test_benchmarks_md_quotes_the_targets_and_what_bounds_them_from_the_recorded_runs() -> None:
    # The page's figures are checked above only where it marks them: it must mark, for each
    # target of ``bench.suite.TARGETS``, its limit, and quote the floor run's figures and the
    # recorded benchmark, floor and instruction-count runs whole.
    from bench.suite import TARGETS

    text = (DOCS / "benchmarks.md").read_text()
    keys = {m.group(2) for m in docnumbers.MARK.finditer(text)}
    assert {f"target.{key}" for key in TARGETS} <= keys
    for key in ("cycle_4x4_vs_queue", "cycle_1x1_one_cpu_vs_floor", "batch_4x4_one_cpu_vs_floor"):
        assert f"bench.{key}.ratio" in keys
    assert "bench.memory_in_flight_vs_floor.value" in keys
    for run in ("1x1", "4x4", "batch"):
        assert {
            f"floor.{run}.floor.ratio",
            f"floor.{run}.impl_floor",
            f"floor.{run}.obliged_floor",
        } <= keys
    assert {"floor.memory.floor", "floor.parts.sum", "floor.profile.receive_now"} <= keys
    blocks = {m.group(1) for m in docnumbers.BLOCK.finditer(text)}
    assert {"bench-run", "file floor.txt", "file icount.txt", "file leak.txt"} <= blocks


def test_the_floor_run_printed_what_its_record_holds() -> None:
    # docs/runs/floor.txt (quoted whole) and docs/bench/floor.json (the facts) are one run.
    printed = docnumbers.FLOOR_TEXT.read_text()
    known = docnumbers.facts()
    for run in docnumbers.FLOOR_RUNS:
        assert f"impl.Queue / floor: {known[f'floor.{run}.impl_floor']}" in printed, run
        assert f"obliged floor / floor: {known[f'floor.{run}.obliged_floor']}" in printed, run
        for system in ("floor", "obliged", "impl"):
            assert f"{known[f'floor.{run}.{system}.ratio']}x queue.Queue" in printed, run
        systems = {"obliged": "obliged floor", "machine": "obliged machine", "impl": "impl.Queue"}
        for system, kind in systems.items():
            if run == "batch" and system == "machine":
                continue  # the obliged machine has no batch steps
            median, least, most = (
                known[f"floor.{run}.{system}_floor.{stat}"] for stat in ("median", "min", "max")
            )
            assert f"{kind:<15} {median} ({least} to {most})" in printed, (run, system)
        if run != "batch":
            shaped = known[f"floor.{run}.machine_floor"]
            assert f"obliged machine / floor: {shaped}" in printed, run
    assert f"floor          {known['floor.memory.floor']} B" in printed
    assert f"{known['floor.parts.sum']} B  sum of the parts" in printed
    share = known["floor.profile.receive_now"]
    assert f"{share}%  impl/fast_machine.py:receive_now" in printed
    for system in ("floor", "obliged", "machine", "impl"):
        ops = [known[f"floor.op.{system}.{op}"] for op in ("send", "receive", "delete", "sum")]
        assert any(ln.split()[-4:] == ops for ln in printed.splitlines()), system
    for what, printed_as in (
        ("design", "the design"),
        ("shape", "the shape"),
        ("own", "impl's own"),
    ):
        diff = [known[f"floor.op.{what}.{op}"] for op in ("send", "receive", "delete", "sum")]
        line = next(ln.split() for ln in printed.splitlines() if ln.strip().startswith(printed_as))
        assert [figure.lstrip("+") for figure in line[2:6]] == diff, what


def test_benchmark_facts_are_the_report_s_rounding(tmp_path: Path) -> None:
    record = {
        "repeat": 3,
        "seconds": 95.9,
        "cpus": 2,
        "load_before": [1.866, 0, 0],
        "load_after": [1.294, 0, 0],
        "rows": [
            {
                "key": "cycle_4x4_vs_queue",
                "skipped": False,
                "value": 21992.7,
                "baseline": 48501.9,
                "ratio": 0.45344,
            },
            {
                "key": "cycle_4x4_one_cpu_vs_queue",
                "skipped": False,
                "value": 76193.2,
                "baseline": 175248.0,
                "ratio": 0.43478,
            },
            {
                "key": "cycle_1x1_vs_moto",
                "skipped": True,
                "value": None,
                "baseline": None,
                "ratio": None,
            },
        ],
    }
    found = docnumbers.bench_facts(record)
    assert found["bench.cycle_4x4_vs_queue.value"] == "21993"
    assert found["bench.cycle_4x4_vs_queue.ratio"] == "0.453"
    assert found["bench.convoy.impl"] == "3.5"
    assert found["bench.run.seconds"] == "96"
    assert found["bench.run.load_before"] == "1.87"
    assert not any(k.startswith("bench.cycle_1x1_vs_moto") for k in found)
    assert docnumbers.problems("0.45<!-- =bench.cycle_4x4_vs_queue.ratio -->", found) == [
        "0.45: bench.cycle_4x4_vs_queue.ratio is 0.453"
    ]
    bad = tmp_path / "icount.txt"
    bad.write_text("# nothing measured\n")
    with pytest.raises(ValueError, match=r"icount\.txt: not the output"):
        docnumbers.icount_facts(bad)
