"""``python -m purerl ...`` is the ``purerl`` command."""

import sys

from purerl.cli import main

if __name__ == "__main__":
    sys.exit(main(prog="purerl"))
