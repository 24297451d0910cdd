"""``purerl eval`` as a script: ``python experiments/evaluate.py --help`` lists its flags."""

import sys

from purerl.cli import guarded
from purerl.cli.evaluate import main

if __name__ == "__main__":
    sys.exit(guarded(lambda: main(sys.argv[1:], f"python {sys.argv[0]}")))
