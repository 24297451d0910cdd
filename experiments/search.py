"""``purerl search`` as a script: ``python experiments/search.py --help`` lists its flags."""

from purerl.cli import run_script

if __name__ == "__main__":
    run_script("purerl.cli.search", "main")
