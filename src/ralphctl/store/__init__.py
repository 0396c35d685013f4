"""The memory: one database (SQLite by default, PostgreSQL by URL) behind ``Store``."""
