"""The search directory's table: ranked rows, aligned columns, "-" where a return is missing."""

import numpy as np

from purerl.search.plan import make_plan
from purerl.search.results import DONE, Row, results_table
from purerl.search.spec import parse_spec
from purerl.search.sweep import ConfigResult
from tests.search.test_spec import spec


def test_the_table_ranks_complete_rows_first_and_marks_missing_returns():
    parsed = parse_spec({**spec(lr={"grid": [1e-3, 1e-2, 3e-2]}), "num_seeds": 2})
    plan = make_plan(parsed)
    returns = [[10.0, np.nan], [20.0, 30.0], [np.nan, np.nan]]
    results = [
        ConfigResult(cfg, np.array(r), np.zeros(2, bool), 1234.0)
        for cfg, r in zip(plan.configs, returns, strict=True)
    ]
    rows = [Row(i, 0, plan.assignments[i], res, 4, DONE) for i, res in enumerate(results)]
    assert results_table(parsed, rows).splitlines() == [
        "| rank | config | lr | final return | per seed | steps/s | status |",
        "|---:|---:|---|---:|---|---:|---|",
        "| 1 | 1 | 0.01 | 25.0 +- 5.0 | 20.0, 30.0 | 1,234 | done |",
        "| 2 | 0 | 0.001 | 10.0 +- 0.0 | 10.0, - | 1,234 | done |",
        "| 3 | 2 | 0.03 | - | -, - | 1,234 | done |",
    ]
    assert len(results_table(parsed, rows, limit=1).splitlines()) == 3
