"""``ralphctl run --mode hook``: one agent session (Claude Code, Codex, …) kept going by its
Stop hook, whose decisions the runner makes, records and bounds (docs/hook-mode.md)."""
