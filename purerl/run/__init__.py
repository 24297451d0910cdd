"""The run layer: what turns a compiled training program into a run a user can trust and see.

| module | owns |
|---|---|
| ``setup`` | what a run asks for, and all it needs built and checked before anything is written |
| ``session`` | the life of a run: lock, create or restore, train, finish |
| ``summary`` | what a run writes besides checkpoints: its sinks, ``summary.json``, curves |
| ``rundir`` | every path and file of a run directory, checkpoint records too; reading runs back |
| ``writes`` | opening files inside a run directory: never through a link or into a special file |
| ``checkpoint`` | orbax checkpoints (the only module that imports orbax) |
| ``trust`` | which code a run's recorded environment may run: none unless named again or trusted |
| ``sinks``, ``tensorboard``, ``wandb_sink`` | progress bar, TensorBoard and W&B logging |
| ``plots``, ``compare`` | learning-curve PNGs and comparison tables |
| ``evaluate``, ``policy``, ``video`` | trained agents from checkpoints: returns, policies, videos |
| ``signals``, ``capacity`` | Ctrl-C and SIGTERM; memory and disk checks |

Everything here may use the compute core (``purerl.core``); nothing there uses this.
"""
