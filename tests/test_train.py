import numpy as np
import pytest

from purerl.logging import ChunkReport, report_rows
from purerl.train import NonFiniteLossError, check_finite, plan_chunks


@pytest.mark.parametrize(
    "num_updates, per_chunk, expected",
    [
        (976, None, [61] * 16),  # a divisor near 976 / 20 keeps one compiled length
        (10, 4, [4, 4, 2]),
        (10, 20, [10]),
        (7, None, [1] * 7),
        (97, None, [5] * 19 + [2]),  # prime: no divisor near the target, one short chunk
    ],
)
def test_plan_chunks(num_updates, per_chunk, expected):
    plan = plan_chunks(num_updates, per_chunk)
    assert plan == expected
    assert sum(plan) == num_updates


def report(metrics, first=0):
    return ChunkReport(first, {k: np.asarray(v, np.float32) for k, v in metrics.items()}, 1.0, 0.5)


def test_non_finite_loss_names_the_update_and_the_fix():
    check_finite(report({"loss/total": [[1.0, 2.0]]}))
    with pytest.raises(
        NonFiniteLossError, match="seed index 1 became non-finite at update 12; lower --lr"
    ):
        check_finite(report({"loss/total": [[1.0, 2.0], [1.0, np.nan]]}, first=10))


def test_report_rows_hold_per_seed_values_and_nan_free_means():
    rows = report_rows(
        report(
            {
                "episode/return": [[1.0, np.nan], [3.0, np.nan]],
                "loss/total": [[0.5, 0.25], [1.5, 0.75]],
            },
            4,
        ),
        env_steps_per_update=100,
        frame_skip=4,
    )
    assert [r["update"] for r in rows] == [5, 6]
    assert rows[0]["env_steps"] == 500 and rows[0]["frames"] == 2000
    assert rows[0]["episode/return"] == 2.0 and rows[1]["episode/return"] is None
    assert rows[1]["per_seed"]["loss/total"] == [0.25, 0.75]
    assert rows[1]["loss/total"] == 0.5
