"""Per-algorithm presets, one module per algorithm (``AlgoSpec.presets_module``)."""
