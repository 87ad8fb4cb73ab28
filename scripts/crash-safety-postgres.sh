#!/usr/bin/env bash
# The SIGKILL-under-load checks of scripts/reliability/ against PostgreSQL: crash-safety.py (every
# acknowledged write present after each restart) and webhook-crash.py (every acknowledged
# change's webhook delivered after the restarts, none for a change that did not commit). Uses the
# test PostgreSQL that scripts/postgres-for-tests.sh started (BUZZKIT_TEST_POSTGRES_URL); each
# check makes its own database there. Without a server it fails rather than skip: CI must run it.
#
#   scripts/crash-safety-postgres.sh [CYCLES]     # 3 by default (the webhook check runs 2)
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BUZZKIT_TEST_POSTGRES_URL:?start one with: eval \"\$(scripts/postgres-for-tests.sh start)\"}"
export BUZZKIT_BINARY=${BUZZKIT_BINARY:-.build/debug/buzzkit}
python3 scripts/reliability/crash-safety.py --cycles "${1:-3}" --database "$BUZZKIT_TEST_POSTGRES_URL"
python3 scripts/reliability/webhook-crash.py --cycles 2 --workers 2 --slow-ms 50 --database "$BUZZKIT_TEST_POSTGRES_URL"
