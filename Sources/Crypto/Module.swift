// Crypto module: implementation lands in its own commit.
