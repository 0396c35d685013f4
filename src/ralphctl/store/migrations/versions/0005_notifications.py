"""Notifications: the outbox of deliveries and the position of its follower of ``events``.

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    serial = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
    op.create_table(
        "notifications",
        sa.Column("id", serial, sa.Identity(), nullable=False),
        sa.Column("loop_id", sa.String(), nullable=False),
        sa.Column("event_seq", sa.BigInteger(), nullable=False),
        sa.Column("event", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("payload", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("claim", sa.String(), nullable=True),
        sa.Column("claimed_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_error", sa.Text(), nullable=True),
        sa.Column("outcomes", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("delivered_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["loop_id"], ["loops.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
        sa.UniqueConstraint("event_seq", "channel", name="uq_notifications_event_channel"),
        sqlite_autoincrement=True,
    )
    op.create_index(
        "ix_notifications_status_next_attempt_at",
        "notifications",
        ["status", "next_attempt_at"],
    )
    op.create_table(
        "notification_cursor",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("seq", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )
    # Notifications start with the events stored from now on: a new database's first ones,
    # but not the history of an upgraded one.
    op.execute(
        "INSERT INTO notification_cursor (name, seq) SELECT 'events', COALESCE(MAX(seq), 0) "
        "FROM events"
    )


def downgrade() -> None:
    op.drop_table("notification_cursor")
    op.drop_index("ix_notifications_status_next_attempt_at", table_name="notifications")
    op.drop_table("notifications")
