"""``ralphctl run --mode hook``: one Claude Code session kept going by its Stop hook, whose
decisions the runner makes, records and bounds (docs/hook-mode.md)."""
