"""ralphctl: run autonomous coding agents in Ralph Wiggum loops, with budgets you can trust."""

__version__ = "0.1.0"
