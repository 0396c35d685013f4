"""Fleet mode: a control request (pause, pause now, stop) waiting for a loop's holder.

Revision ID: 0007
Revises: 0006
"""

import sqlalchemy as sa
from alembic import op

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("loop_leases", sa.Column("control_request", sa.String(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("loop_leases") as batch:
        batch.drop_column("control_request")
