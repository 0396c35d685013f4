"""Where each scope's files go. Environment overrides keep tests out of the real home."""

from __future__ import annotations

import os
from pathlib import Path

PLUGIN_DIR_ENV = "RALPHCTL_PLUGIN_DIR"
MANIFEST_NAME = "ralphctl-install.json"
PROJECT_MANIFEST = "ralphctl-install.local.json"


def claude_config_dir() -> Path:
    """Claude Code's user directory: ``$CLAUDE_CONFIG_DIR``, else ``~/.claude``."""
    configured = os.environ.get("CLAUDE_CONFIG_DIR")
    return Path(configured).expanduser() if configured else Path.home() / ".claude"


def user_settings() -> Path:
    return claude_config_dir() / "settings.json"


def known_marketplaces() -> Path:
    """Claude Code's own record of the marketplaces it has loaded."""
    return claude_config_dir() / "plugins" / "known_marketplaces.json"


def marketplace_dir() -> Path:
    """The local marketplace holding the plugin: ``$RALPHCTL_PLUGIN_DIR``, else in the user
    data dir."""
    configured = os.environ.get(PLUGIN_DIR_ENV)
    if configured:
        return Path(configured).expanduser()
    from platformdirs import user_data_dir

    return Path(user_data_dir("ralphctl")) / "claude-plugin"


def project_claude_dir(project: Path) -> Path:
    return project / ".claude"
