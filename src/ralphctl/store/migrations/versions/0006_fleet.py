"""Fleet mode: where a fleet loop's work lives, the lease by which one worker holds a loop,
and the registry of workers.

Revision ID: 0006
Revises: 0005
"""

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "loop_leases",
        sa.Column("loop_id", sa.String(), nullable=False),
        sa.Column("worker", sa.String(), nullable=True),
        sa.Column("generation", sa.BigInteger(), nullable=False),
        sa.Column("acquired_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=True),
        sa.ForeignKeyConstraint(["loop_id"], ["loops.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("loop_id"),
    )
    op.create_table(
        "fleet_loops",
        sa.Column("loop_id", sa.String(), nullable=False),
        sa.Column("repo_url", sa.String(), nullable=False),
        sa.Column("base_branch", sa.String(), nullable=False),
        sa.Column("labels", sa.JSON(none_as_null=True), nullable=False),
        sa.ForeignKeyConstraint(["loop_id"], ["loops.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("loop_id"),
    )
    op.create_table(
        "workers",
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("labels", sa.JSON(none_as_null=True), nullable=False),
        sa.Column("concurrency", sa.Integer(), nullable=False),
        sa.Column("version", sa.String(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=False),
        sa.PrimaryKeyConstraint("name"),
    )


def downgrade() -> None:
    op.drop_table("workers")
    op.drop_table("fleet_loops")
    op.drop_table("loop_leases")
