#!/usr/bin/env bash
# The SIGKILL-under-load check of scripts/reliability/crash-safety.py against PostgreSQL: every
# acknowledged write present after each restart. Uses the test PostgreSQL that
# scripts/postgres-for-tests.sh started (BUZZKIT_TEST_POSTGRES_URL); the check makes its own
# database there. Without a server it fails rather than skip: CI must run it.
#
#   scripts/crash-safety-postgres.sh [CYCLES]     # 3 by default
set -euo pipefail
cd "$(dirname "$0")/.."
: "${BUZZKIT_TEST_POSTGRES_URL:?start one with: eval \"\$(scripts/postgres-for-tests.sh start)\"}"
BUZZKIT_BINARY=${BUZZKIT_BINARY:-.build/debug/buzzkit} \
    python3 scripts/reliability/crash-safety.py --cycles "${1:-3}" --database "$BUZZKIT_TEST_POSTGRES_URL"
