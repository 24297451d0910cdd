"""Hyperparameter search: ``python experiments/search.py --param lr=loguniform:1e-4,1e-2``.

Configurations differing only in traced hyperparameters (PPOHparams / DQNHparams fields) train
as one vmapped program; grouped fields (shapes, loop lengths, branches) get one program per
value. ``--spec FILE`` reads a YAML/JSON spec, ``--backend ray`` runs each program as a Ray Tune
trial (``pip install 'purerl[search]'``). Writes runs/search-<algo>-<env>-<timestamp>/ with
spec.json, results.csv, results.md, best_config.json and returns_vs_params.png.
"""

import sys

from purerl.runtime import configure_jax

# Before importing the rest: importing the environments (gymnax) creates JAX's CPU client, and
# async dispatch is fixed when the client is created.
configure_jax()

from purerl.search.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
