"""Per-algorithm presets, one module per algorithm (``AlgoSpec.presets_module``)."""

MINATAR_GAMES = ("Asterix-MinAtar", "Breakout-MinAtar", "Freeway-MinAtar", "SpaceInvaders-MinAtar")
"""The MinAtar games with PPO and PQN presets: one setting per algorithm for all four, the one
chosen on Breakout-MinAtar, not tuned per game."""
