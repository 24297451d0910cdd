"""``purerl eval`` as a script: ``python experiments/evaluate.py --help`` lists its flags."""

from purerl.cli import run_script

if __name__ == "__main__":
    run_script("purerl.cli.evaluate", "main")
