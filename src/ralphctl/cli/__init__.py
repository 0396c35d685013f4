"""The faces on the terminal: one module per command group, wired in ``app``."""
