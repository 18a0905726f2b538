"""BOHB: the kernel density against hand values, the model finds the label that decides the
accuracy, exact resume mid-run, and bad arguments refused by name."""

from __future__ import annotations

import json

import numpy as np
import pytest

from nasx.experiment.schedulers import BOHB, Assignment, Hyperband, LearningCurves, simulate
from nasx.experiment.schedulers.halving import BracketPlan
from nasx.space import Categorical, Numerical, SearchSpace
from nasx.strategy import Random

SPACE = SearchSpace(
    a=Categorical(list(range(8)), label="a"),
    b=Categorical(list(range(8)), label="b"),
    c=Categorical(list(range(8)), label="c"),
)
ARCHS = [{"a": a, "b": b, "c": c} for a in range(8) for b in range(8) for c in range(8)]


def accuracy(arch, epoch=9):
    """Label ``a`` alone decides: a == 3 is the good region (b and c play no part)."""
    return (0.9 if arch["a"] == 3 else 0.5) - 0.02 * (9 - epoch) / 9


def test_kernel_density_by_hand():
    s = BOHB(1, 9, 3, seed=0)
    s.setup(SearchSpace(x=Categorical([0, 1], label="x"), y=Categorical([0, 1, 2], label="y")))
    points = np.array([[0, 1], [0, 2]])
    # x: both points agree -> min_bandwidth; y: half off the mode -> 0.5 (below 2/3)
    assert s._bandwidths(points) == pytest.approx([0.001, 0.5])
    # at (0, 1): point 1 gives 0.999 * 0.5, point 2 gives 0.999 * 0.5 / 2; the mean of the two
    density = s._density(np.array([[0, 1]]), points, np.array([0.001, 0.5]))
    assert density == pytest.approx([(0.999 * 0.5 + 0.999 * 0.25) / 2])


def _fill_rung(s, trials):
    """Start ``trials`` (arch, value) as new trials (the test picks their archs) and report
    each at rung 0; a promotion asked for in between trains to its rung with the same value."""
    values = {}
    for arch, value in trials:
        job = s.assign()
        while job.trial is not None:
            for budget in range(job.from_budget + 1, job.budget + 1):
                s.report(job.trial, budget, values[job.trial])
            job = s.assign()
        assert job.budget == 1
        trial = len(s.configs)
        s.started(trial, Assignment(None, job.budget, 0, job.bracket, arch))
        values[trial] = value
        s.report(trial, 1, value)


def test_model_proposes_the_good_region():
    """Four archs with a == 3 top the rung (good set, need = 3 labels + 1); 20 others form the
    bad set. Every model-based proposal (random_fraction=0) then keeps a == 3: the good
    density's bandwidth for ``a`` is min_bandwidth (widened 3x: 0.003)."""
    s = BOHB(1, 9, 3, seed=1, random_fraction=0.0)
    s.setup(SPACE)
    s.plan = [BracketPlan(0, 100)]  # one bracket that never fills: every result at rung 0
    rng = np.random.default_rng(0)
    good = [{"a": 3, "b": int(b), "c": int(c)} for b, c in rng.integers(8, size=(4, 2))]
    bad = [{"a": int(a), "b": int(b), "c": int(c)} for a, b, c in rng.integers(8, size=(20, 3))]
    bad = [arch for arch in bad if arch["a"] != 3][:16]
    _fill_rung(s, [(arch, accuracy(arch, 1)) for arch in good + bad])
    model = s.model_data()
    assert model is not None and model[0] == 0 and len(model[1]) == 4 and len(model[2]) == 16
    proposals = []
    for _ in range(20):
        arch = s.propose()
        assert arch is not None and arch not in proposals
        proposals.append(arch)
        s.configs[len(s.configs)] = s._encode(arch)  # as started() would, without a bracket
        s.seen.add(tuple(s.configs[len(s.configs) - 1]))
    assert all(arch["a"] == 3 for arch in proposals)


def test_no_model_until_a_rung_has_enough_points():
    s = BOHB(1, 9, 3, seed=0, random_fraction=0.0)
    s.setup(SPACE)
    s.plan = [BracketPlan(0, 100)]
    _fill_rung(s, [(arch, accuracy(arch, 1)) for arch in ARCHS[:7]])  # need 4 good + 4 bad
    assert s.model_data() is None
    _fill_rung(s, [(ARCHS[100], 0.1)])
    assert s.model_data() is not None


def test_bohb_finds_better_archs_than_hyperband_on_the_same_table():
    """With the model, many more of BOHB's trials land in the good region (1/8 at random)."""
    curves = LearningCurves(
        ARCHS,
        [[accuracy(a, e) for e in range(1, 10)] for a in ARCHS],
        [[accuracy(a, e) for e in range(1, 10)] for a in ARCHS],
        [[1.0] * 9 for _ in ARCHS],
    )
    shares = {}
    for name, make in (
        ("BOHB", lambda seed: BOHB(1, 9, 3, seed=seed)),
        ("Hyperband", lambda seed: Hyperband(1, 9, 3)),
    ):
        hits = total = 0
        for seed in range(5):
            r = simulate(make(seed), Random(seed=seed), curves, workers=4, max_epochs=400)
            hits += sum(t.arch["a"] == 3 for t in r.trials[40:])  # after the first brackets
            total += len(r.trials[40:])
            assert len({json.dumps(t.arch) for t in r.trials}) == len(r.trials)  # no repeats
        shares[name] = hits / total
    # measured: 0.12 and 0.58 (0.26 with the ratio's order reversed)
    assert shares["Hyperband"] < 0.2 and shares["BOHB"] > 0.45, shares


def _drive(s, steps, start=0, trace=None, results=None):
    """One worker, archs scored by ``accuracy``: record every assignment and decision."""
    trace = [] if trace is None else trace
    results = {} if results is None else results  # trial -> budget reached
    for _ in range(steps):
        job = s.assign()
        if job.trial is None:
            trial = len(s.configs)
            s.started(trial, job)
            results[trial] = (job.arch, 0)
        else:
            trial = job.trial
        arch, budget = results[trial]
        decision = "continue"
        while decision == "continue":
            budget += 1
            decision = s.report(trial, budget, accuracy(arch, budget))
        results[trial] = (arch, budget)
        trace.append((repr(job), decision))
    return trace, results


def test_exact_resume_mid_run():
    whole, _ = _drive(_setup(BOHB(1, 9, 3, seed=7)), 120)
    first = _setup(BOHB(1, 9, 3, seed=7))
    trace, results = _drive(first, 55)
    state = json.loads(json.dumps(first.state_dict()))
    for resumed in (BOHB(1, 9, 3, seed=7), BOHB(1, 9, 3)):  # the same seed, or adopt it
        resumed.setup(SPACE)
        resumed.load_state_dict(state)
        assert json.loads(json.dumps(resumed.state_dict())) == state
        rest, _ = _drive(resumed, 65, trace=list(trace), results=dict(results))
        assert rest == whole
    assert any("arch=" in job for job, _ in whole[50:])  # model proposals were replayed
    with pytest.raises(ValueError, match="seed 7, this one 8"):
        _setup(BOHB(1, 9, 3, seed=8)).load_state_dict(state)
    with pytest.raises(ValueError, match="stored scheduler state is BOHB"):
        Hyperband(1, 9, 3).load_state_dict(state)


def _setup(s):
    s.setup(SPACE)
    return s


def test_a_tiny_space_is_exhausted_then_only_promotions_run():
    s = BOHB(1, 3, 3, seed=0)
    s.setup(SearchSpace(x=Categorical([0, 1, 2], label="x")))
    archs = []
    for trial in range(3):
        job = s.assign()
        archs.append(job.arch)
        s.started(trial, job)
        assert s.report(trial, 1, 0.1 * trial) == "pause"
    assert sorted(a["x"] for a in archs) == [0, 1, 2]
    assert s.propose() is None
    assert s.assign() == Assignment(2, 3, 1, 0)  # the best of the bracket, no new trial


def test_bad_arguments_are_refused_by_name():
    for kwargs, message in [
        ({"eta": 1}, "eta must be an integer >= 2"),
        ({"min_budget": 10, "max_budget": 9}, "min_budget .10. must not exceed"),
        ({"seed": -1}, "seed must be an integer >= 0"),
        ({"num_samples": 0}, "num_samples must be an integer >= 1"),
        ({"min_points_in_model": 0}, "min_points_in_model must be an integer >= 1"),
        ({"top_n_percent": 100}, "top_n_percent must be in 1..99"),
        ({"random_fraction": 1.5}, r"random_fraction must be a number in \[0.0, 1.0\]"),
        ({"bandwidth_factor": 0.5}, "bandwidth_factor must be a number in"),
        ({"min_bandwidth": 0}, r"min_bandwidth must be a number in \(0.0, 1.0\)"),
    ]:
        with pytest.raises(ValueError, match=message):
            BOHB(**kwargs)
    s = BOHB(seed=0)
    with pytest.raises(ValueError, match=r"call BOHB.setup\(search_space\) before assign"):
        s.assign()
    with pytest.raises(ValueError, match="label 'lr' is continuous"):
        s.setup(SearchSpace(lr=Numerical(0.1, 1.0, label="lr")))
    s.setup(SPACE)
    with pytest.raises(ValueError, match="BOHB proposes its trials' archs"):
        s.started(0, Assignment(None, 1))
    with pytest.raises(ValueError, match="label 'a' must take one of"):
        s.started(0, Assignment(None, 1, arch={"a": 99, "b": 0, "c": 0}))


def test_several_objectives_rank_by_fronts():
    """Accuracy up, latency down: the good set is the first non-dominated front(s), so the
    model keeps a == 3 (accurate) with c == 0 (fast) and avoids the dominated rest."""
    s = BOHB(1, 9, 3, seed=3, random_fraction=0.0, directions=["maximize", "minimize"])
    s.setup(SPACE)
    s.plan = [BracketPlan(0, 100)]
    rng = np.random.default_rng(1)
    archs = [{"a": int(a), "b": int(b), "c": int(c)} for a, b, c in rng.integers(8, size=(60, 3))]
    archs += [{"a": 3, "b": b, "c": 0} for b in range(4)]
    seen, trials = set(), []
    for arch in archs:
        if json.dumps(arch) not in seen:
            seen.add(json.dumps(arch))
            trials.append((arch, (accuracy(arch, 1), float(arch["c"]) + (arch["a"] != 3))))
    _fill_rung(s, trials)
    _, good, _ = s.model_data()
    assert [(s._decode(g)["a"], s._decode(g)["c"]) for g in good][:4] == [(3, 0)] * 4
    assert s.propose()["a"] == 3
