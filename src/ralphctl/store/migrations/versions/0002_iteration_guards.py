"""Per-iteration guard results (verification gates, response-analyzer signals), and an index
on iteration start times for the calls-per-hour limit.

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("iterations", sa.Column("gate_results", sa.JSON(none_as_null=True)))
    op.add_column("iterations", sa.Column("signals", sa.JSON(none_as_null=True)))
    op.create_index("ix_iterations_started_at", "iterations", ["started_at"])


def downgrade() -> None:
    op.drop_index("ix_iterations_started_at", table_name="iterations")
    with op.batch_alter_table("iterations") as batch:
        batch.drop_column("signals")
        batch.drop_column("gate_results")
