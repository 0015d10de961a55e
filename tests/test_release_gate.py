"""The release gate's rule (``app.analysis.release_gate``), its settings file, and the regression
test against a baseline (``app.analysis.regression``), on hand-made runs whose every number is
worked out here.

Formulas pinned, written out below rather than taken from the code under test:
- Wilson 95% score interval, z = Φ⁻¹(0.975) (Wilson 1927; Newcombe 1998 table I);
- net violation rate = rate − noise floor, its interval the Wilson interval less the floor (the
  floor taken as fixed), clipped at 0;
- Newcombe's hybrid score interval for a difference of proportions (Newcombe 1998, method 10):
  L = d − √((p₁ − l₁)² + (u₂ − p₂)²), U = d + √((u₁ − p₁)² + (p₂ − l₂)²).
"""

from __future__ import annotations

import math
from statistics import NormalDist

import pytest

from app.analysis.release_gate import FAILED, NOT_GATED, PASSED, REFERENCE, run_verdicts
from app.analysis.release_report import BaselineChoice, GateInputError, evaluate_gate
from app.analysis.release_thresholds import (
    GateConfigError,
    GateSettings,
    TaskThresholds,
    settings_from_toml,
    settings_to_toml,
)
from storage import Store
from tests.gate_data import add_run

Z = NormalDist().inv_cdf(0.975)


def wilson(fails: float, n: int) -> tuple[float, float]:
    p = fails / n
    centre = (p + Z**2 / (2 * n)) / (1 + Z**2 / n)
    half = Z * math.sqrt(p * (1 - p) / n + Z**2 / (4 * n**2)) / (1 + Z**2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def test_the_wilson_formula_here_gives_the_published_values():
    assert wilson(0, 10) == pytest.approx((0.0, 0.2775), abs=5e-5)
    assert wilson(1, 29) == pytest.approx((0.0061, 0.1718), abs=5e-5)


# One run: the floor si.identity 45 PASS / 5 FAIL (10%); char.leet 30 / 20 (40%, net 30%);
# word.antonym ("should change") 40 / 10 (20% did not change); sentence.uppercase 50 / 0 with
# 3 SKIP and 2 ERROR.
RUN = {
    "si.identity": (45, 5, 0, 0),
    "char.leet": (30, 20, 0, 0),
    "word.antonym": (40, 10, 0, 0),
    "sentence.uppercase": (50, 0, 3, 2),
}
FLOOR = 5 / 50


@pytest.fixture
def store():
    s = Store(":memory:")
    add_run(s, "run-1", RUN)
    yield s
    s.close()


def verdicts(store, settings: GateSettings) -> dict:
    return {v.relation_id: v for v in run_verdicts(store, store.run("run-1"), settings)}


def test_invariance_relation_is_gated_on_its_net_rate_and_the_interval_less_the_floor(store):
    leet = verdicts(store, GateSettings(max_rate=0.5))["char.leet"]
    low, high = wilson(20, 50)  # (0.27609, 0.53819)
    assert leet.gated.rate == pytest.approx(20 / 50 - FLOOR)  # 0.30
    assert (leet.gated.ci_low, leet.gated.ci_high) == pytest.approx((low - FLOOR, high - FLOOR))
    assert leet.gated.noise_floor == pytest.approx(FLOOR)
    assert leet.role == "invariance"


def test_should_change_relation_is_gated_on_its_own_rate_without_the_floor(store):
    antonym = verdicts(store, GateSettings(max_rate=0.5))["word.antonym"]
    assert antonym.role == "should change"
    assert antonym.gated.rate == pytest.approx(10 / 50)  # the share that did not change
    assert (antonym.gated.ci_low, antonym.gated.ci_high) == pytest.approx(wilson(10, 50))
    assert antonym.gated.noise_floor is None


def test_the_noise_floor_relation_is_the_reference_never_gated(store):
    identity = verdicts(store, GateSettings(max_rate=0.0))["si.identity"]
    assert identity.outcome == REFERENCE and identity.threshold is None


@pytest.mark.parametrize(
    ("max_rate", "mode", "outcome"),
    [
        # net interval of char.leet: [0.27609 − 0.1, 0.53819 − 0.1] = [0.17609, 0.43819]
        (0.15, "significant", FAILED),  # low 0.176 > 0.15: evidence it is above
        (0.20, "significant", PASSED),  # low 0.176 ≤ 0.20: no evidence, the build passes
        (0.20, "strict", FAILED),  # high 0.438 ≥ 0.20
        (0.43, "strict", FAILED),  # high 0.438 ≥ 0.43
        (0.44, "strict", PASSED),  # high 0.438 < 0.44
    ],
)
def test_significant_and_strict_rules_on_the_hand_computed_interval(store, max_rate, mode, outcome):
    leet = verdicts(store, GateSettings(max_rate=max_rate, mode=mode))["char.leet"]
    assert leet.outcome == outcome


def test_strict_says_how_many_more_cases_would_pass_at_the_observed_rate(store):
    """At 40% observed and a 10% floor, strict with max 0.40 needs Wilson's upper bound below
    0.50: the smallest n where wilson(0.4·n, n) < 0.5, found here by counting up."""
    leet = verdicts(store, GateSettings(max_rate=0.40, mode="strict"))["char.leet"]
    needed = next(n for n in range(50, 10_000) if wilson(0.4 * n, n)[1] - FLOOR < 0.40)
    assert wilson(0.4 * (needed - 1), needed - 1)[1] - FLOOR >= 0.40
    assert leet.outcome == FAILED and leet.more_cases_needed == needed - 50
    assert f"about {needed - 50} more judged cases" in leet.reason


def test_strict_at_a_rate_above_the_max_says_no_number_of_cases_passes(store):
    leet = verdicts(store, GateSettings(max_rate=0.25, mode="strict"))["char.leet"]
    assert leet.more_cases_needed is None  # net rate 0.30 ≥ 0.25
    assert "no number of cases passes" in leet.reason


def test_skip_and_error_cases_are_counted_but_not_judged(store):
    upper = verdicts(store, GateSettings(max_rate=0.1))["sentence.uppercase"]
    assert (upper.n, upper.n_skip, upper.n_error, upper.gated.judged) == (55, 3, 2, 50)
    assert upper.gated.rate == 0.0 and upper.outcome == PASSED


# ------------------------------------------------------------------ thresholds


def test_most_specific_threshold_wins():
    settings = GateSettings(
        max_rate=0.5,
        relation_max=(("char.*", 0.3), ("char.leet", 0.2), ("c*", 0.4)),
        tasks=(("qa", TaskThresholds(max_rate=0.1, relation_max=(("word.*", 0.05),))),),
    )
    assert settings.threshold_for("sentiment", "char.leet") == 0.2  # exact beats globs
    assert settings.threshold_for("sentiment", "char.delete") == 0.3  # longer glob beats c*
    assert settings.threshold_for("sentiment", "word.antonym") == 0.5  # the file's max
    assert settings.threshold_for("qa", "char.leet") == 0.1  # the task's max beats the file's
    assert settings.threshold_for("qa", "word.antonym") == 0.05  # the task's relation entry
    assert GateSettings(relation_max=(("char.*", 0.3),)).threshold_for("x", "word.a") is None


def test_unmatched_relation_is_not_gated(store):
    found = verdicts(store, GateSettings(relation_max=(("char.*", 0.9),)))
    assert found["char.leet"].outcome == PASSED
    assert found["word.antonym"].outcome == NOT_GATED


CONFIG = """
mode = "strict"
max = 0.1
allow_errors = true
max_increase = 0.02

[relations]
"char.*" = 0.2

[tasks.sentiment]
max = 0.3

[tasks.sentiment.relations]
"word.antonym" = 0.25
"""


def test_config_file_reads_every_setting_and_writes_back_the_same():
    settings = settings_from_toml(CONFIG)
    assert settings == GateSettings(
        max_rate=0.1,
        relation_max=(("char.*", 0.2),),
        tasks=(("sentiment", TaskThresholds(0.3, (("word.antonym", 0.25),))),),
        mode="strict",
        allow_errors=True,
        max_increase=0.02,
    )
    assert settings_from_toml(settings_to_toml(settings)) == settings


@pytest.mark.parametrize(
    ("text", "key"),
    [
        ("maxx = 0.1", "maxx"),
        ("max = 1.5", "max"),
        ("max = 'high'", "max"),
        ('mode = "lenient"', "mode"),
        ("[relations]\n'char.*' = -0.1", "relations.char.*"),
        ("[tasks.qa]\nmax = 0.1\nlimit = 2", "tasks.qa.limit"),
        ("[tasks.qa.relations]\n'x' = true", "tasks.qa.relations.x"),
        ("allow_errors = 'yes'", "allow_errors"),
    ],
)
def test_config_error_names_the_key(text, key):
    with pytest.raises(GateConfigError) as error:
        settings_from_toml(text)
    assert str(error.value).startswith(f"{key}:")


# ------------------------------------------------------------------ regression


def newcombe(f1: int, n1: int, f2: int, n2: int) -> tuple[float, float]:
    p1, p2 = f1 / n1, f2 / n2
    (l1, u1), (l2, u2) = wilson(f1, n1), wilson(f2, n2)
    d = p1 - p2
    return d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt(
        (u1 - p1) ** 2 + (p2 - l2) ** 2
    )


def test_newcombe_formula_here_gives_the_published_example():
    """Newcombe 1998, table II, example (a): 56/70 − 48/80 → (0.0524, 0.3339)."""
    assert newcombe(56, 70, 48, 80) == pytest.approx((0.0524, 0.3339), abs=5e-5)


def regression_store(new_fails: int) -> Store:
    """A fake model's baseline run at 10% (5 of 50) and a new run at new_fails of 50."""
    store = Store(":memory:")
    add_run(store, "base", {"char.leet": (45, 5, 0, 0)}, created_at="2026-11-20T09:00:00+00:00")
    add_run(
        store, "new", {"char.leet": (50 - new_fails, new_fails, 0, 0)},
        created_at="2026-11-21T09:00:00+00:00",
    )  # fmt: skip
    return store


def test_rate_rising_from_10_to_30_percent_regresses():
    store = regression_store(15)
    report = evaluate_gate(store, ["new"], GateSettings(), BaselineChoice(run_id="base"))
    (change,) = report.runs[0].changes
    assert (change.ci_low, change.ci_high) == pytest.approx(newcombe(15, 50, 5, 50))
    assert change.ci_low > 0  # ≈ 0.045: the whole interval is a rise
    assert change.difference == pytest.approx(0.2)
    assert change.p_value < 0.05 and change.regressed  # one relation: BH leaves p as it is
    assert change.p_adjusted == pytest.approx(change.p_value)
    assert report.exit_code == 1


def test_rate_rising_from_10_to_12_percent_at_n_50_does_not_regress():
    store = regression_store(6)
    report = evaluate_gate(store, ["new"], GateSettings(), BaselineChoice(run_id="base"))
    (change,) = report.runs[0].changes
    assert change.ci_low == pytest.approx(newcombe(6, 50, 5, 50)[0])
    assert change.ci_low < 0 and not change.regressed
    assert report.exit_code == 0


def test_the_p_value_is_the_intervals_dual():
    """p < 0.05 exactly when the 95% Newcombe interval's lower bound is above δ; at δ equal to
    that lower bound, p is 0.05 itself."""
    from app.analysis.regression import worse_by_more_than_p

    low = newcombe(15, 50, 5, 50)[0]
    assert worse_by_more_than_p(15, 50, 5, 50, low) == pytest.approx(0.05, abs=1e-9)
    assert worse_by_more_than_p(15, 50, 5, 50, low + 0.01) > 0.05
    assert worse_by_more_than_p(15, 50, 5, 50, 0.25) == 1.0  # rise 0.20 is not above 0.25


def test_max_increase_tolerates_a_rise():
    store = regression_store(15)
    report = evaluate_gate(
        store, ["new"], GateSettings(max_increase=0.1), BaselineChoice(run_id="base")
    )
    assert not report.regressions  # 0.2 rise, but the interval's low end 0.045 < 0.1


def test_benjamini_hochberg_across_relations():
    """Two relations: one with raw p just under 0.05, one with p = 1. BH multiplies the smaller
    by m / rank = 2 / 1, so it no longer counts as a regression."""
    from app.analysis.regression import compare_counts, worse_by_more_than_p

    # 13 of 50 against 5 of 50: raw p between 0.025 and 0.05 (checked below).
    p = worse_by_more_than_p(13, 50, 5, 50, 0.0)
    assert 0.025 < p < 0.05
    changes = compare_counts(
        "new", "base", {"a": (13, 50), "b": (5, 50)}, {"a": (5, 50), "b": (5, 50)}
    )
    by_id = {c.relation_id: c for c in changes}
    assert by_id["a"].p_adjusted == pytest.approx(min(1.0, p * 2 / 1))
    assert not by_id["a"].regressed and not by_id["b"].regressed


def test_baseline_model_is_that_models_latest_run_on_the_same_task():
    store = regression_store(15)
    add_run(store, "other-old", {"char.leet": (45, 5, 0, 0)}, model="model-b",
            created_at="2026-11-19T09:00:00+00:00")  # fmt: skip
    add_run(store, "other-new", {"char.leet": (40, 10, 0, 0)}, model="model-b",
            created_at="2026-11-22T09:00:00+00:00")  # fmt: skip
    report = evaluate_gate(store, ["new"], GateSettings(), BaselineChoice(model="model-b"))
    assert report.runs[0].baseline_run_id == "other-new"
    with pytest.raises(GateInputError, match="no run of nobody"):
        evaluate_gate(store, ["new"], GateSettings(), BaselineChoice(model="nobody"))


def test_stored_baseline_is_used_unless_turned_off():
    store = regression_store(15)
    store.set_baseline("base", note="approved in review")
    assert store.baseline_for_task("sentiment").run_id == "base"
    report = evaluate_gate(store, ["new"], GateSettings())
    assert report.runs[0].baseline_run_id == "base" and report.exit_code == 1
    with pytest.raises(GateInputError, match="nothing to judge against"):
        evaluate_gate(store, ["new"], GateSettings(), BaselineChoice(use_stored=False))
