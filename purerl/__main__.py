"""``python -m purerl ...`` is the ``purerl`` command."""

import sys

try:
    from purerl.cli import main
except KeyboardInterrupt:  # Ctrl-C before the command's own handling is in place
    print("error: interrupted while starting; nothing was written", file=sys.stderr)
    sys.exit(130)

if __name__ == "__main__":
    sys.exit(main(prog="purerl"))
