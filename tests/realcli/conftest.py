"""The real-CLI fixtures for this directory (defined in ``fixtures.py``)."""

from tests.realcli.fixtures import claude_bin, real_claude

__all__ = ["claude_bin", "real_claude"]
