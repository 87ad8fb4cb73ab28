// SQLite module: implementation lands in its own commit.
