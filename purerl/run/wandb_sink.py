"""Weights & Biases logging, optional: ``wandb`` is imported only when a sink is built."""

from __future__ import annotations

from typing import Any

from purerl.core.report import ChunkReport
from purerl.extras import import_extra
from purerl.run.rundir import report_rows
from purerl.run.tensorboard import number_or_none


class WandbSink:
    """A ``purerl.core.report.Sink`` that logs every metric to a Weights & Biases run.

    Keys follow ``purerl.run.tensorboard``: ``<metric>`` is the mean over seeds,
    ``<metric>/seed_<i>`` the seed at index ``i``, ``perf/frames`` the frames per agent; the W&B
    step is the environment step count of one agent. At close the numbers of the summary go into
    the W&B run summary as ``summary/<key>`` and the run is finished.

    Args:
        project: W&B project name.
        run_name: display name of the run (e.g. the run directory's name).
        config: logged as the run's config (e.g. the ``config.json`` record).
        env_steps_per_update: environment steps of one agent per update (the step unit).
        frame_skip: emulator frames per environment step, for ``perf/frames``.
        wandb_dir: where wandb keeps its local files (wandb's default, ``./wandb``, if None).

    Raises:
        MissingExtraError: wandb is not installed (``pip install wandb``).
    """

    def __init__(
        self,
        project: str,
        run_name: str,
        config: dict[str, Any],
        env_steps_per_update: int,
        frame_skip: int = 1,
        wandb_dir: str | None = None,
    ):
        wandb = import_extra("wandb", "'purerl[wandb]'", "--wandb-project")
        self.run = wandb.init(project=project, name=run_name, config=config, dir=wandb_dir)
        self.env_steps_per_update = env_steps_per_update
        self.frame_skip = frame_skip

    def write(self, report: ChunkReport) -> None:
        for row in report_rows(report, self.env_steps_per_update, self.frame_skip):
            data = {"perf/frames": row["frames"]}
            for name, per_seed in row["per_seed"].items():
                data[name] = row[name]
                data.update({f"{name}/seed_{i}": value for i, value in enumerate(per_seed)})
            # W&B plots None as a gap, which is what an update without an episode is.
            self.run.log(data, step=row["env_steps"])

    def close(self, summary: dict[str, Any]) -> None:
        numbers = {f"summary/{k}": number_or_none(v) for k, v in summary.items()}
        self.run.summary.update({k: v for k, v in numbers.items() if v is not None})
        self.run.finish()
