"""purerl: pure-functional reinforcement learning compiled end to end with JAX."""

__version__ = "0.1.0"
