// Storage module: implementation lands in its own commit.
