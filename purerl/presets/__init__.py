"""Per-algorithm presets, one module per algorithm (``AlgoSpec.presets_module``)."""

MINATAR_GAMES = ("Asterix-MinAtar", "Breakout-MinAtar", "Freeway-MinAtar", "SpaceInvaders-MinAtar")
"""The MinAtar games with PPO, DQN and PQN presets: one setting per algorithm for all four, the one
chosen on Breakout-MinAtar, not tuned per game (one exception: PPO's learning rate on Asterix)."""
