"""Notifications: loop events sent to webhooks, the desktop and commands, through an outbox
in the database (docs/notifications.md). Kept light: ``ralphctl.settings`` reads its config."""
