"""Numerical building blocks shared by the algorithms: pure functions with NumPy-tested math."""
