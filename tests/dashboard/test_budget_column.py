"""The dashboard's trial table shows the budget each trial reached when a scheduler ran
(issue 31, item 7), and sorts on it; runs without a scheduler keep their table as it was."""

from pathlib import Path

from nasx.dashboard.experiments import summary, trial_row
from nasx.dashboard.rows import parse_query, sort_trials
from nasx.experiment.storage.readonly import ExperimentRecord
from nasx.trial import Trial


def _trials(budgets):
    return [
        Trial(i, {"k": i}, "paused" if b == 1 else "succeeded", metric=0.1 * i, budget=b)
        for i, b in enumerate(budgets)
    ]


def test_the_table_has_a_budget_column_only_for_a_scheduled_run():
    scheduled = ExperimentRecord(Path("."), "multi-trial", {}, _trials([1, 3, 1, 9]))
    assert summary(0, "v", scheduled)["has_budget"] is True
    assert [trial_row(t)["budget"] for t in scheduled.trials] == [1, 3, 1, 9]
    plain = ExperimentRecord(Path("."), "multi-trial", {}, _trials([None, None]))
    assert summary(0, "v", plain)["has_budget"] is False


def test_rows_sort_by_budget_ties_by_id():
    query = parse_query({"sort": ["budget"], "desc": ["1"]}, ["default"])
    ordered = sort_trials(_trials([1, 3, 1, 9, None]), query.sort, query.descending)
    assert [t.id for t in ordered] == [3, 1, 0, 2, 4]  # no budget: last
