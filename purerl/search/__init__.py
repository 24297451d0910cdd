"""Hyperparameter search: specs (``spec.py``), their configurations and batches (``plan.py``),
the backends that train the batches (``sweep.py`` in this process, each batch one vmapped
program; ``ray_backend.py`` on Ray Tune, one trial per batch in ``trial.py``), and the search
directory's files (``results.py``, ``plot.py``).

The command line is ``purerl search`` (``purerl/cli/search.py``).
"""
