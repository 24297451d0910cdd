"""Hyperparameter search: specs (``spec.py``), their configurations and batches (``plan.py``),
backends (``purerl.search.sweep`` in this process, ``ray_backend.py`` on Ray Tune), and the search
directory's files (``results.py``, ``plot.py``).

``experiments/search.py`` is the command line (``cli.py``).
"""
