"""The initial schema: loops, iterations, events, errors, checkpoints.

Revision ID: 0001
Revises:
"""

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

# Frozen copies of the column types in schema.py at this revision.
_TIME = sa.DateTime(timezone=True)
_SERIAL = sa.BigInteger().with_variant(sa.Integer(), "sqlite")


def _json() -> sa.JSON:
    return sa.JSON(none_as_null=True)


def _loop_id(*, primary_key: bool = False) -> sa.Column[str]:
    return sa.Column(
        "loop_id",
        sa.String(),
        sa.ForeignKey("loops.id", ondelete="CASCADE"),
        primary_key=primary_key,
        nullable=False,
    )


def upgrade() -> None:
    op.create_table(
        "loops",
        sa.Column("id", sa.String(), primary_key=True),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("mode", sa.String(), nullable=False),
        sa.Column("agent", sa.String(), nullable=False),
        sa.Column("workdir", sa.Text(), nullable=False),
        sa.Column("task", sa.Text(), nullable=False),
        sa.Column("workflow", sa.String()),
        sa.Column("config", _json(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("stop_reason", sa.String()),
        sa.Column("stop_detail", sa.Text()),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=False),
        sa.Column("tokens_input", sa.BigInteger(), nullable=False),
        sa.Column("tokens_output", sa.BigInteger(), nullable=False),
        sa.Column("tokens_cache_read", sa.BigInteger(), nullable=False),
        sa.Column("tokens_cache_write", sa.BigInteger(), nullable=False),
        sa.Column("consecutive_errors", sa.Integer(), nullable=False),
        sa.Column("runtime_s", sa.Float(), nullable=False),
        sa.Column("breaker_state", _json()),
        sa.Column("rate_limited_until", _TIME),
        sa.Column("agent_session_id", sa.String()),
        sa.Column("runner_pid", sa.Integer()),
        sa.Column("runner_host", sa.String()),
        sa.Column("created_at", _TIME, nullable=False),
        sa.Column("started_at", _TIME),
        sa.Column("ended_at", _TIME),
        sa.Column("updated_at", _TIME),
    )
    op.create_index("ix_loops_status", "loops", ["status"])

    op.create_table(
        "iterations",
        _loop_id(primary_key=True),
        sa.Column("n", sa.Integer(), primary_key=True),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("started_at", _TIME, nullable=False),
        sa.Column("completed_at", _TIME),
        sa.Column("duration_ms", sa.BigInteger()),
        sa.Column("tokens_input", sa.BigInteger(), nullable=False),
        sa.Column("tokens_output", sa.BigInteger(), nullable=False),
        sa.Column("tokens_cache_read", sa.BigInteger(), nullable=False),
        sa.Column("tokens_cache_write", sa.BigInteger(), nullable=False),
        sa.Column("cost_usd", sa.Float()),
        sa.Column("cost_source", sa.String()),
        sa.Column("exit_code", sa.Integer()),
        sa.Column("completion_signal_found", sa.Boolean(), nullable=False),
        sa.Column("blocked_reason", sa.Text()),
        sa.Column("error_message", sa.Text()),
        sa.Column("output_summary", sa.Text(), nullable=False),
        sa.Column("files_changed", sa.Integer()),
        sa.Column("agent_session_id", sa.String()),
        sa.Column("num_turns", sa.Integer()),
        sa.Column("permission_denials", _json(), nullable=False),
    )

    op.create_table(
        "events",
        sa.Column("seq", _SERIAL, sa.Identity(), primary_key=True),
        _loop_id(),
        sa.Column("event_type", sa.String(), nullable=False),
        sa.Column("data", _json(), nullable=False),
        sa.Column("timestamp", _TIME, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_events_loop_id_seq", "events", ["loop_id", "seq"])

    op.create_table(
        "errors",
        sa.Column("id", _SERIAL, sa.Identity(), primary_key=True),
        _loop_id(),
        sa.Column("iteration", sa.Integer()),
        sa.Column("error_type", sa.String(), nullable=False),
        sa.Column("message", sa.Text(), nullable=False),
        sa.Column("context", _json(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_errors_loop_id", "errors", ["loop_id"])

    op.create_table(
        "checkpoints",
        sa.Column("id", _SERIAL, sa.Identity(), primary_key=True),
        _loop_id(),
        sa.Column("iteration", sa.Integer(), nullable=False),
        sa.Column("commit_sha", sa.String(), nullable=False),
        sa.Column("snapshot", _json(), nullable=False),
        sa.Column("created_at", _TIME, nullable=False),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_checkpoints_loop_id", "checkpoints", ["loop_id"])


def downgrade() -> None:
    for table in ("checkpoints", "errors", "events", "iterations", "loops"):
        op.drop_table(table)
