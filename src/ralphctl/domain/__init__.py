"""The brain: pure decisions over plain data, shared by every loop mode. No I/O here.

Import the submodules directly (``from ralphctl.domain.markers import ...``); this package
imports nothing so that the Stop hook stays fast.
"""
