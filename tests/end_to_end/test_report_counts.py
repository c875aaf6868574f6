"""Every count in the report links to the units behind it, and the evidence viewer counts the same
units: a report over real runs of the four families (the viewer tests' runs: misleading under none
and caution with two models, presupposition judged by a stub judge, clinical noise, a search agent,
pressure after commitment) is read cell by cell; each linked number's URL is parsed and answered by
the viewer's own query layer (`parse_query`, `units_page`) over the same run directories, and the
viewer's total must equal the number the cell shows: a count itself; for a rate, its k (a link
with an outcome or a score: the flips, the answers judged -1, the extracted labels; for a rate
shown as 1 - rate, its n - k) or its n (the units of a condition or a stratum); for a mean score,
its n. Tables whose every count must be linked (the score distribution, the reading table, both
profiles, the trade-off's values, a stratum's clean accuracy) are checked for a number left bare."""

from __future__ import annotations

import html
import re
from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import parse_qsl, urlencode, urlsplit

import pytest

from medresilience import EvalOptions, build_report, evaluate, parse_model_spec
from medresilience.suite import Suite
from medresilience.testing.stub import Faults, StubServer
from medresilience.testing.stub.policies import messages_digest
from medresilience.view.address import VIEWER_URL
from medresilience.view.pages import Links, environment
from medresilience.view.query import close_all, open_runs, parse_query, units_page
from medresilience.view.render import Renderer
from test_tradeoff import Tally, misleading_policy, presupposition_policy, spec
from view_runs import hostile, make_runs

RUNS = ("misleading", "presupposition", "noise", "agent", "pressure")


def mixed(messages, request):
    """A third of the replies answer, a third are unreadable, a third run past a 3-word budget."""
    return ("Answer: A", "I cannot tell", "Let me think about this case step by step first")[messages_digest(messages)[0] % 3]


def faulty_run(root):
    """A misleading run with failed calls, unread replies and cut ones (the key numbers' counts)."""
    with StubServer(policy=mixed, faults=Faults(seed=3, rate_permanent=0.2)) as srv:
        spec = parse_model_spec(f"openai:f,label=m-f,max_tokens=3,base_url={srv.base_url}")
        evaluate(Suite.load(root / "mis-suite"), [spec], root / "faulty", EvalOptions())
    return root / "faulty"


def pushed(messages, request):
    """Turn 1 right (the tiny suite's gold letter); a second turn moved off it for half the
    pushbacks (by the digest of the conversation)."""
    users = [m["content"] for m in messages if m["role"] == "user"]
    num = re.search(r"Question number (\d+)", users[0])
    gold = "ABCD"[(int(num.group(1)) - 1) % 4] if num else "A"
    if len(users) > 1 and messages_digest(messages)[0] % 2:
        return "Answer: " + ("B" if gold == "A" else "A")
    return f"Answer: {gold}"


def pushed_run(root):
    """A pressure run whose first answers are right, so its pooled flips (claims, every pushback)
    have pairs."""
    with StubServer(policy=pushed) as srv:
        evaluate(Suite.load(root / "pressure-suite"), [parse_model_spec(f"openai:p,label=m-p,base_url={srv.base_url}")], root / "pushed", EvalOptions())
    return root / "pushed"


def undecided(messages, request):
    """The trade-off test's presupposition replies, with the judge's verdict unreadable for a third
    of its calls (two wordings: two unscored reasons, maybe more)."""
    judged = presupposition_policy(Tally())(messages, request)
    if messages[0]["role"] == "system" and messages[0]["content"].startswith("You are a judge."):
        return ("I cannot decide.", '{"reason": "unsure"}', judged)[messages_digest(messages)[0] % 3]
    return judged


def unscored_run(root):
    """A presupposition run whose judge leaves some answers unscored (the unscored reasons' counts)."""
    with StubServer(policy=undecided) as srv:
        evaluate(
            Suite.load(root / "presup-suite"),
            [spec(srv, "stub-u", "model-u")],
            root / "unscored",
            EvalOptions(scoring="judge", family={"judge": f"openai:judge-u,base_url={srv.base_url}"}),
        )
    return root / "unscored"


class Cells(HTMLParser):
    """Every table cell of a page: (section id, header of its column, its text, its links as
    (href, link text))."""

    def __init__(self) -> None:
        super().__init__()
        self.cells: list[dict] = []
        self.section: str | None = None
        self.heads: list[str] = []
        self.in_head = False
        self.cell: dict | None = None
        self.col = 0
        self.row = 0
        self.link: list | None = None

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if self.cell is not None:
            self.cell["text"] += " "  # a line break or a span apart from the text before it
        if tag == "section":
            self.section = a.get("id")
        elif tag == "table":
            self.heads = []
        elif tag == "thead":
            self.in_head = True
        elif tag == "tr":
            self.col = 0
            self.row += 1
        elif tag == "th" and self.in_head:
            self.heads.append("")
        elif tag == "td":
            self.cell = {"section": self.section, "row": self.row, "col": self.col, "text": "", "links": []}
        elif tag == "a" and self.cell is not None and a.get("class") == "units":
            self.link = [a["href"], ""]

    def handle_endtag(self, tag):
        if tag == "thead":
            self.in_head = False
        elif tag == "td" and self.cell is not None:
            c = self.cell
            c["head"] = self.heads[c["col"]] if c["col"] < len(self.heads) else ""
            c["text"] = " ".join(c["text"].split())
            self.cells.append(c)
            self.cell = None
            self.col += 1
        elif tag == "a" and self.link is not None:
            self.cell["links"].append(tuple(self.link))
            self.link = None

    def handle_data(self, data):
        if self.in_head and self.heads:
            self.heads[-1] += data
        if self.cell is not None:
            self.cell["text"] += data
        if self.link is not None:
            self.link[1] += data


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """The viewer tests' runs and the faulty misleading run (another model), made once for the
    module: the tests read them (what they write goes in folders of their own)."""
    root = tmp_path_factory.mktemp("counts")
    dirs = make_runs(root)
    return root, dirs, faulty_run(root)


@pytest.fixture(scope="module")
def built(made):
    """The report over the runs (its result, with the parts it was written from) and the runs opened as the viewer opens them."""
    root, dirs, faulty = made
    runs = [*(dirs[n] for n in RUNS), faulty, pushed_run(root), unscored_run(root)]
    rep = build_report(runs, out_dir=root / "report")
    opened = open_runs(runs)
    yield rep, opened
    close_all(opened)


@pytest.fixture(scope="module")
def report(built):
    rep, opened = built
    parser = Cells()
    parser.feed(rep.html.read_text(encoding="utf-8"))
    return parser.cells, opened


def test_every_linked_cell_of_the_report_parts_names_as_many_units_as_the_viewer_counts(built):
    """The parts the report is written from: each cell with a link says how many units its link
    names (a count, a rate's k or n); the viewer's query over the same runs counts exactly those,
    read from the cell's values, not from the page."""
    rep, opened = built
    checked: dict[str, int] = {}
    for section in rep.parts:
        for table in section.tables():
            for column, cell in table.linked():
                filters, total = viewer_total(opened, cell.href)
                assert cell.units is not None and total == cell.units, (section.anchor, column.header, cell, filters, total)
                checked[section.anchor] = checked.get(section.anchor, 0) + 1
    assert {"reading", "agent", "pressure", "profile-all", "tradeoff"} <= set(checked), checked


def viewer_total(opened, href: str) -> tuple[dict[str, str], int]:
    """The filters of a report link and the number of units the viewer shows for them."""
    assert href.startswith(VIEWER_URL + "/units?"), href
    params = parse_qsl(urlsplit(href).query)
    q = parse_query(params, opened)
    return dict(params), units_page(opened[q.run], q)["total"]


def expected(cell: dict, text: str, filters: dict[str, str], pairs: int | None) -> int | None:
    """The number of units a linked number of a cell stands for (see the module's docstring); its n
    is the cell's, else its row's pairs (None: neither shows one)."""
    if re.fullmatch(r"\d+", text):
        return int(text)
    found = re.search(r"n=(\d+)", cell["text"])
    if found is None and pairs is None:
        return None
    n = int(found.group(1)) if found else pairs
    if text.endswith("%") and ("outcome" in filters or "score" in filters):
        k = round(float(text[:-1]) * n / 100)
        return n - k if "1 - " in cell["head"] or "Resilience" in cell["head"] else k
    return n


def confirm_links(cells: list[dict], opened) -> dict[str, int]:
    """Every linked number of a report's cells against the viewer's count of its units (see the
    module's docstring); returns how many were confirmed per section."""
    checked: dict[str, int] = {}
    confirmed: set[str] = set()
    pairs = {c["row"]: int(c["text"].split()[0]) for c in cells if c["head"] == "Pairs" and c["text"][:1].isdigit()}
    unsized, means = [], []
    # each model's number, by the filters of its link without the model
    per_model: dict[frozenset, dict[str, int]] = {}
    for c in cells:
        for href, text in c["links"]:
            filters, total = viewer_total(opened, href)
            if "model" not in filters and not re.fullmatch(r"\d+", text.strip()):
                means.append((c, filters, total))  # a mean across models (a count of every model is checked as a count)
                continue
            want = expected(c, text.strip(), filters, pairs.get(c["row"]))
            if want is None:
                unsized.append(href)
                continue
            assert total == want, (c, filters, total)
            confirmed.add(href)
            checked[c["section"]] = checked.get(c["section"], 0) + 1
            if "model" in filters:
                rest = frozenset((k, v) for k, v in filters.items() if k != "model")
                per_model.setdefault(rest, {})[filters["model"]] = want
    # a rate shown without its n (before and after a setting) links to units a sized cell links to
    assert not set(unsized) - confirmed, set(unsized) - confirmed
    # a mean across models links every model of its run: the viewer counts the units of the models'
    # own cells (their numbers summed), each model of the run with units under the filter has one
    for c, filters, total in means:
        shown = per_model.get(frozenset(filters.items()), {})
        rv = opened[int(filters["run"])]
        with_units = {m for m in rv.values["model"] if viewer_total(opened, VIEWER_URL + "/units?" + urlencode({**filters, "model": m}))[1]}
        assert with_units <= set(shown), (c, filters, shown)
        assert total == sum(shown.values()), (c, filters, shown, total)
        checked[c["section"] + " (means)"] = checked.get(c["section"] + " (means)", 0) + 1
    return checked


def test_every_linked_number_is_the_viewers_count(report):
    cells, opened = report
    checked = confirm_links(cells, opened)
    # every family's section and the report's shared tables link counts the viewer confirms
    assert {
        "misleading",
        "misleading (means)",
        "presupposition",
        "noise",
        "pressure",
        "reading",
        "profile-all",
        "profile",
        "tradeoff",
        "key",
        "tests",
        "agent",
        "settings",
    } <= set(checked), checked
    assert sum(checked.values()) > 150, checked


#: the settings effect's paired test: its discordant counts b / c are the cell's counts (not its p)
PAIRED_TEST = "Paired test (b / c)"
#: the trade-off's paired test (its name and p) and its discordant counts b and c, a column each
TRADEOFF_TEST, TRADEOFF_B, TRADEOFF_C = "Paired test", "b (none only)", "c (setting only)"


def bare(cells: list[dict], section: str, head: str | re.Pattern) -> list[dict]:
    """The cells of a column holding a nonzero number with no link (of a paired test's cell, its
    b / c; a row with no test, the trade-off's tokens and money per item, pairs items, not units)."""
    untested = {c["row"] for c in cells if c["section"] == section and c["head"] in (PAIRED_TEST, TRADEOFF_TEST) and c["text"] == "—"}
    return [
        c
        for c in cells
        if c["section"] == section
        and (re.fullmatch(head, c["head"]) if isinstance(head, re.Pattern) else c["head"] == head)
        and not (c["head"] == "Pairs" and c["row"] in untested)
        and re.search(r"[1-9]", " ".join(re.findall(r": \d+ / \d+", c["text"])) if c["head"] == PAIRED_TEST else c["text"])
        and not c["links"]
    ]


def test_score_distribution_links_each_score(report):
    cells, opened = report
    scores = [c for c in cells if c["section"] == "presupposition" and c["head"].startswith("Score ")]
    assert {c["head"] for c in scores} == {"Score -1", "Score 0", "Score 1"}
    assert all(c["links"] for c in scores) and not bare(cells, "presupposition", re.compile(r"Score .*"))
    seen = set()
    for c in scores:
        filters, total = viewer_total(opened, c["links"][0][0])
        assert filters["score"] == c["head"].split()[1] and filters["condition"] == "presupposition"
        units = units_page(opened[int(filters["run"])], parse_query(parse_qsl(urlsplit(c["links"][0][0]).query), opened))["units"]
        assert len(units) == total
        if not total:
            assert c["text"].startswith("0.0%")
            continue
        assert {u["state"] for u in units} == {"valid"} and {f"{u['value']:g}" for u in units} == {filters["score"]}
        seen.add(filters["score"])
    assert seen == {"-1", "0", "1"}


def test_clean_accuracy_of_a_probe_facet_links_the_clean_units_of_its_items(report):
    cells, opened = report
    clean = [c for c in cells if c["section"] == "misleading" and c["head"] == "Clean acc" and c["links"]]
    # a model's cells (a mean across models' cell links every model's: test_every_linked_number_...)
    by_facet = [c for c in clean if any(k in c["links"][0][0] for k in ("content_type=", "provenance=")) and "model=" in c["links"][0][0]]
    # every stratum's clean accuracy is linked, a mean across models when its models are one run's
    # (the report's other means average the models of several runs: no one viewer URL holds them)
    assert by_facet and not [c for c in bare(cells, "misleading", "Clean acc") if "models" not in c["text"]]
    assert [c for c in clean if "models" in c["text"]]
    for c in by_facet:
        filters, total = viewer_total(opened, c["links"][0][0])
        assert filters["scope"] == "item" and filters["condition"] == "clean"
        q = parse_query(parse_qsl(urlsplit(c["links"][0][0]).query), opened)
        units = units_page(opened[q.run], q, size=1000)["units"]
        assert total == int(re.search(r"n=(\d+)", c["text"]).group(1)) == len(units)
        assert all(u["condition"] == "clean" and u["probe_id"] is None for u in units)


@pytest.mark.parametrize(
    "section, heads",
    [
        ("reading", ("Replies", "Read", "Read by extraction model", "Invalid", "Truncated", "Unscored")),
        ("profile-all", re.compile(r"(Misleading context|False presuppositions|Clinical noise|Pressure after commitment): .*")),
        ("profile", re.compile(r"Clean accuracy|Resilience, Type \d")),
        ("tradeoff", re.compile(r".*\((clean MCQ|original case)\)|PCR .*|NFP .*|.*: without|with")),
        ("key", re.compile(r"Errors|Invalid|Truncated|Unscored|Items|Cases|Questions")),
        ("misleading", re.compile(r"Clean-correct pairs|Flips|To target|Elsewhere|Invalid|Truncated")),
        ("tests", re.compile(r"[bc] \(.*\)|Pairs")),
        ("pressure", "Pairs"),
        ("presupposition", "Units"),
        ("tradeoff", re.compile(r"Units \((none|setting)\)")),
        ("tradeoff", re.compile(r"[bc] \((none|setting) only\)|Pairs")),
        ("settings", re.compile(r"None|Setting|Pairs|Paired test \(b / c\)")),
        ("noise", "b / c|Original, same cases"),
        ("agent", "Units"),
    ],
)
def test_no_count_left_bare(report, section, heads):
    cells, _ = report
    if isinstance(heads, tuple):
        heads = re.compile("|".join(re.escape(h) for h in heads))
    assert [c for c in cells if c["section"] == section and re.fullmatch(heads, c["head"]) and c["links"]], section
    assert not bare(cells, section, heads), bare(cells, section, heads)


def test_the_viewers_default_address_is_written_once():
    """`medres view`, its app and the report's links take the viewer's default port from one
    constant (viewer_address): no other source file writes it."""
    import medresilience
    from medresilience.view.address import VIEWER_PORT

    src = Path(medresilience.__file__).parent
    writers = [p.relative_to(src).as_posix() for p in src.rglob("*.py") if str(VIEWER_PORT) in p.read_text(encoding="utf-8")]
    assert writers == ["view/address.py"]


def test_an_items_count_links_only_a_run_asked_once(tmp_path):
    """An items count links to the units of a condition planned once per item; a run that asked
    each unit several times (epochs) has more of them than items: its count stays unlinked."""
    from medresilience.report.html import items_url, viewer_links
    from medresilience.report.rundir import RunData

    once = RunData(tmp_path / "a", "a", {"options": {"epochs": 1}}, {"models": {"m": {}}})
    twice = RunData(tmp_path / "b", "b", {"options": {"epochs": 2}}, {"models": {"m": {}}})
    with viewer_links(VIEWER_URL, [once, twice]):
        assert items_url("a", "m", "none", "clean") == VIEWER_URL + "/units?run=0&model=m&setting=none&condition=clean"
        assert items_url("b", "m", "none", "clean") is None


@pytest.fixture(scope="module")
def compared(made):
    """The viewer tests' runs and the faulty misleading run (another model)."""
    return made


def linked_counts(page: str, section: str, heads: set[str]) -> list[tuple[str, str, str]]:
    """(what, href, number) of each linked count of a comparison page: its cells under `heads` and
    the shared units it names before its table."""
    parser = Cells()
    parser.feed(page)
    out = [(c["head"], href, text) for c in parser.cells if c["section"] == section and c["head"] in heads for href, text in c["links"]]
    shared = re.findall(r'<a class="units" href="([^"]+)"[^>]*>(\d+)</a> (?:shared answered units|questions scored on both sides)', page)
    return out + [("shared", html.unescape(href), n) for href, n in shared]


def test_the_compare_pages_counts_are_the_viewers(compared):
    """`medres compare A B` links each side's units and answered units (A as the viewer's run 0,
    B as run 1: `medres view A B`), its shared units and each measure's pairs (and, where the page
    shows them, its test's b and c): B's units read against A's (`versus=0`, A's model and setting
    where they differ); the viewer counts the same units."""
    from medresilience.report.compare import compare_runs

    root, dirs, faulty = compared
    presup = dirs["presupposition"]
    pushed2 = root / "pushed-caution"
    with StubServer(policy=pushed) as srv:
        spec_p = parse_model_spec(f"openai:p,label=m-p,base_url={srv.base_url}")
        evaluate(Suite.load(root / "pressure-suite"), [spec_p], pushed2, EvalOptions(settings=("none", "caution")))
    for a, b, pair, heads, versus in (
        (dirs["misleading"], faulty, "model-a=m-f", {"Units", "Answered", "Pairs"}, {"versus_model": "model-a"}),
        # a run against itself: its units under caution against its units under none, read as another run's
        (presup, presup, "model-a:none=model-a:caution", {"Units", "Answered", "pairs", "Exact test (b / c), p"}, {}),
        (dirs["noise"], dirs["noise"], "model-a:none=model-a:caution", {"Units", "Answered", "pairs / items", "Paired test (b / c), p"}, {}),
        # pressure: turn-1 accuracy and each condition's flip after a right first answer on both sides
        (pushed2, pushed2, "m-p:none=m-p:caution", {"Units", "Answered", "pairs / items", "Paired test (b / c), p"}, {}),
    ):
        page = compare_runs(a, b, root / f"cmp-{b.name}-{pair}", pairs=[pair]).html.read_text(encoding="utf-8")
        assert f"medres view {a} {b}" in page
        linked = linked_counts(page, "compare", heads)
        assert {"shared", *heads} <= {what for what, _h, _t in linked}, linked
        opened = open_runs([a, b])
        try:
            runs = set()
            for what, href, text in linked:
                filters, total = viewer_total(opened, href)
                assert total == int(text), (what, filters, total)
                runs.add(filters["run"])
                if what not in ("Units", "Answered"):
                    assert filters["run"] == "1" and filters["versus"] == "0", filters
                    assert {k: v for k, v in filters.items() if k in ("versus_model", "versus_setting")} == versus, filters
                    # the page keeps the pairing in its filter form, and offers the outcomes read against it
                    page_html = Renderer(environment(), opened, Links()).units(parse_query(parse_qsl(urlsplit(href).query), opened))
                    assert '<input type="hidden" name="versus" value="0">' in page_html
                    assert '<option value="paired_none"' in page_html
            assert runs == {"0", "1"}
        finally:
            close_all(opened)


def test_a_tradeoff_row_with_none_from_another_run_links_its_pairs(compared, tmp_path):
    """A setting run without none pairs with none of another run (the trade-off's rule): its rows'
    pairs and discordant pairs link to the setting's units read against the none run's
    (`versus=`), and the viewer counts the cell's number."""
    root, _dirs, _faulty = compared
    runs = [tmp_path / "base", tmp_path / "caution"]
    with StubServer(policy=hostile(misleading_policy(Tally()))) as srv:
        for run, setting in zip(runs, ("none", "caution")):
            evaluate(Suite.load(root / "mis-suite"), [spec(srv, "stub-a", "model-a")], run, EvalOptions(settings=(setting,)))
    page = build_report(runs, out_dir=tmp_path / "report").html.read_text(encoding="utf-8")
    parser = Cells()
    parser.feed(page)
    rows: dict[int, dict[str, dict]] = {}
    for c in parser.cells:
        if c["section"] == "tradeoff":
            rows.setdefault(c["row"], {})[c["head"]] = c
    opened = open_runs(runs)
    try:
        seen = set()
        for row in rows.values():
            if TRADEOFF_TEST not in row:
                continue
            for part, cell in (("test", row[TRADEOFF_B]), ("test", row[TRADEOFF_C]), ("pairs", row["Pairs"])):
                for href, text in cell["links"]:
                    filters, total = viewer_total(opened, href)
                    assert total == int(text) > 0, (row, filters)
                    if filters["run"] == "1":
                        assert filters["versus"] == "0" and "versus_model" not in filters and "versus_setting" not in filters, filters
                        seen.add(part)
        assert seen == {"test", "pairs"}, seen
    finally:
        close_all(opened)


def test_tradeoff_pairs_and_discordant_pairs_are_the_setting_units_read_against_none(report):
    """Each trade-off row's pairs and its paired test's b and c link to the units under its setting
    read against the same units under none (`Outcomes.versus`), for every family with a trade-off;
    a mean score (PCS) has pairs and no discordant counts."""
    cells, opened = report
    rows: dict[int, dict[int, dict]] = {}
    for c in cells:
        if c["section"] == "tradeoff" and c["head"] in ("Family", "Measure", TRADEOFF_TEST, TRADEOFF_B, TRADEOFF_C, "Pairs"):
            rows.setdefault(c["row"], {})[c["head"]] = c
    seen: dict[str, set[str]] = {}
    for row in rows.values():
        if TRADEOFF_TEST not in row:
            continue
        family, measure = row["Family"]["text"], row["Measure"]["text"]
        for part, cell in (("test", row[TRADEOFF_B]), ("test", row[TRADEOFF_C]), ("pairs", row["Pairs"])):
            for href, text in cell["links"]:
                filters, total = viewer_total(opened, href)
                assert total == int(text) > 0, (row, filters)
                assert filters["setting"] != "none" and "none" in filters["outcome"], filters
                seen.setdefault(family, set()).add(part)
        if measure.startswith("PCS"):
            assert not row[TRADEOFF_B]["links"] and not row[TRADEOFF_C]["links"] and row["Pairs"]["links"], row
    assert {"Misleading context", "False presuppositions", "Clinical noise"} <= set(seen), seen
    assert all(v == {"test", "pairs"} for v in seen.values()), seen


def test_settings_effect_tests_link_their_discordant_pairs_a_tasrs_flips_to_the_target_on_one_side(report):
    """The settings effect's paired tests (each rate of a setting against none in one run) link
    their b and c: a TASR's are its probes flipped to the target under none only
    (`flip_to_target_only_none`) and under the setting only (`flip_to_target_only_here`), on the
    probes whose clean answers are right on both sides; the viewer counts the cell's number."""
    cells, opened = report
    rows: dict[int, dict[str, dict]] = {}
    for c in cells:
        if c["section"] == "settings":
            rows.setdefault(c["row"], {})[c["head"]] = c
    tasr = []
    for row in rows.values():
        test, metric = row[PAIRED_TEST], row["Metric"]["text"]
        b, c = (int(x) for x in re.search(r": (\d+) / (\d+)", test["text"]).groups())
        # a zero is not linked: the links are b's then c's, of those not zero
        shown = [(part, n) for part, n in (("b", b), ("c", c)) if n]
        assert [int(text) for _href, text in test["links"]] == [n for _part, n in shown], row
        for (part, n), (href, _text) in zip(shown, test["links"]):
            filters, total = viewer_total(opened, href)
            assert total == n and filters["setting"] != "none", (row, filters)
            if metric.endswith("TASR"):
                side = "none" if part == "b" else "here"
                assert filters["outcome"] == f"reference_right,reference_right_none,flip_to_target_only_{side}", filters
                # the outcome is one of the run's: counted in the API and offered in the filter bar
                q = parse_query(parse_qsl(urlsplit(href).query), opened)
                assert units_page(opened[q.run], q)["counts"]["outcome"][f"flip_to_target_only_{side}"] == n
                bar = Renderer(environment(), opened, Links()).units(q)
                assert f'<option value="flip_to_target_only_{side}" selected>' in bar
                tasr.append(part)
    assert tasr, "no TASR with a discordant pair"
    # a family with no target (presupposition) has no such outcome
    assert not {"flip_to_target_only_none", "flip_to_target_only_here"} & set(opened[RUNS.index("presupposition")].outcomes)


def test_a_pairing_names_a_run_of_the_same_family(report):
    """`versus=` pairs one model's units of a run with another run's of the same family only; its
    model and setting must be that run's; `versus_model` or `versus_setting` alone is refused."""
    from medresilience.view.query import QueryError

    _cells, opened = report
    mis, presup = RUNS.index("misleading"), RUNS.index("presupposition")
    faulty = len(RUNS)  # the faulty misleading run (model m-f, none only)
    for params, says in (
        ({"versus": presup, "model": "model-a"}, "same family"),
        ({"versus": faulty}, "give model="),
        ({"versus": faulty, "model": "model-a", "versus_model": "model-a"}, "versus_model 'model-a'"),
        ({"versus": faulty, "model": "model-a", "versus_setting": "caution"}, "versus_setting 'caution'"),
        ({"versus_model": "m-f"}, "give versus=RUN"),
        ({"versus": 99, "model": "model-a"}, "versus 99"),
    ):
        with pytest.raises(QueryError, match=says):
            parse_query([("run", str(mis)), *((k, str(v)) for k, v in params.items())], opened)
    q = parse_query([("run", str(mis)), ("model", "model-a"), ("versus", str(faulty)), ("versus_model", "m-f"), ("outcome", "paired_none")], opened)
    assert parse_qsl(urlsplit(q.url()).query) == [
        ("run", str(mis)),
        ("model", "model-a"),
        ("outcome", "paired_none"),
        ("versus", str(faulty)),
        ("versus_model", "m-f"),
    ]
    assert units_page(opened[mis], q)["total"] > 0


def test_a_label_in_two_runs_of_one_family_links_each_runs_own_units(compared, tmp_path):
    """model-a and model-b are in two misleading runs (the viewer tests' run and its copy whose one
    score label another tool wrote) and in a noise run: the report names them per run
    (`model-a [mis]`, `model-a [mis-label]`, `model-a [noise]`; model_names), and every linked
    number is the viewer's count of the units of its own run (the row's run, the label alone)."""
    _root, dirs, _faulty = compared
    runs = [dirs["misleading"], dirs["label"], dirs["noise"]]
    rep = build_report(runs, out_dir=tmp_path / "report")
    parser = Cells()
    parser.feed(rep.html.read_text(encoding="utf-8"))
    opened = open_runs(runs)
    try:
        checked = confirm_links(parser.cells, opened)
        assert {"misleading", "profile-all", "profile", "tradeoff", "key", "reading", "settings"} <= set(checked), checked
        names = [r.name for r in runs]
        rows: dict[tuple[str, int], list[dict]] = {}
        for c in parser.cells:
            rows.setdefault((c["section"], c["row"]), []).append(c)
        qualified = 0
        for row in rows.values():
            named = [m for c in row if (m := re.fullmatch(r"(model-[ab]) \[([\w-]+)\]", c["text"]))]
            if not named:
                continue
            label, run = named[0].groups()
            for c in row:
                for href, _text in c["links"]:
                    filters = dict(parse_qsl(urlsplit(href).query))
                    assert (filters["run"], filters.get("model", label)) == (str(names.index(run)), label), (c, filters)
                    qualified += 1
        assert qualified > 50, qualified
    finally:
        close_all(opened)
