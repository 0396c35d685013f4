"""The agent process of each iteration (pid and start time), so that start-up reconciliation
can stop an agent whose runner died.

Revision ID: 0003
Revises: 0002
"""

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("iterations", sa.Column("agent_pid", sa.Integer()))
    op.add_column("iterations", sa.Column("agent_started_at", sa.DateTime(timezone=True)))


def downgrade() -> None:
    with op.batch_alter_table("iterations") as batch:
        batch.drop_column("agent_started_at")
        batch.drop_column("agent_pid")
