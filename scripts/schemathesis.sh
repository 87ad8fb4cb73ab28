#!/usr/bin/env bash
# Property-based test of the running server against its own OpenAPI document: schemathesis
# generates requests from openapi.json and checks every answer is documented (status,
# content type, headers, body schema) and that nothing is a 5xx.
#
#   scripts/schemathesis.sh                 # 30 examples an operation
#   MAX_EXAMPLES=100 scripts/schemathesis.sh
#   scripts/schemathesis.sh --hypothesis-seed=1   # extra arguments go to `schemathesis run`
#
# Needs python3 (with venv) and PyPI the first time: schemathesis is installed into
# .build-tools/venv. Exits non-zero on any failure; the server is stopped on exit.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

# 3.39 is the last 3.x; OpenAPI 3.1 is behind `--experimental=openapi-3.1` there.
SCHEMATHESIS_VERSION="${SCHEMATHESIS_VERSION:-3.39.16}"
# Newer Hypothesis breaks schemathesis 3.x ("'many' object has no attribute 'more'").
HYPOTHESIS_VERSION="${HYPOTHESIS_VERSION:-6.131.14}"
MAX_EXAMPLES="${MAX_EXAMPLES:-30}"
VENV="$ROOT/.build-tools/venv"
EXTRA=("$@")
ST="$VENV/bin/schemathesis"

if ! "$ST" --version 2>/dev/null | grep -q "version $SCHEMATHESIS_VERSION\$" \
    || ! "$VENV/bin/python" -c "import hypothesis, sys; sys.exit(hypothesis.__version__ != '$HYPOTHESIS_VERSION')" 2>/dev/null; then
    echo "installing schemathesis $SCHEMATHESIS_VERSION (hypothesis $HYPOTHESIS_VERSION) into $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet --disable-pip-version-check \
        "schemathesis==$SCHEMATHESIS_VERSION" "hypothesis==$HYPOTHESIS_VERSION"
fi

# `swift build` is incremental: cheap when nothing changed, and it re-embeds openapi.json.
swift build --product buzzkit >&2
BIN="$(swift build --show-bin-path)/buzzkit"

# The database goes to tmpfs when there is one: this checks the API contract, not durability,
# and fsync on a disk shared with other builds can stall a write for seconds.
SCRATCH="${TMPDIR:-/tmp}"
[[ -z "${TMPDIR:-}" && -d /dev/shm && -w /dev/shm ]] && SCRATCH=/dev/shm
WORK="$(mktemp -d "$SCRATCH/buzzkit-schemathesis.XXXXXX")"
SERVER_PID=""
cleanup() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        kill -TERM "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT INT TERM

WORKSPACE_KEY="bk_ws_$(python3 -c 'import secrets,string; print("".join(secrets.choice(string.ascii_letters + string.digits) for _ in range(32)))')"
BUZZKIT_BOOTSTRAP_WORKSPACE_KEY="$WORKSPACE_KEY" BUZZKIT_LOG_LEVEL="${BUZZKIT_LOG_LEVEL:-warn}" \
    "$BIN" serve --host 127.0.0.1 --port 0 --database "$WORK/db.sqlite" >"$WORK/stdout" 2>"$WORK/stderr" &
SERVER_PID=$!

BASE=""
for _ in $(seq 1 100); do
    BASE="$(grep -o 'http://[0-9.]*:[0-9]*' "$WORK/stdout" | head -n 1 || true)"
    [[ -n "$BASE" ]] && break
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$WORK/stderr" >&2; echo "server exited" >&2; exit 1; }
    sleep 0.1
done
[[ -n "$BASE" ]] || { echo "server did not print its address" >&2; exit 1; }
echo "server at $BASE" >&2

# One tenant a run, so settings one run changes (PATCH /v1/tenant) do not steer another.
create_tenant() {
    curl -sS --fail-with-body -X POST "$BASE/v1/tenants" \
        -H "Authorization: Bearer $WORKSPACE_KEY" -H 'Content-Type: application/json' -d "{\"name\":\"$1\"}"
}
field() { python3 -c 'import json,sys; d=json.load(sys.stdin)["data"]; print(d["tenant"]["id"] if sys.argv[1]=="id" else d[sys.argv[1]])' "$1"; }

status=0
run() {
    local label="$1"
    shift
    echo "=== schemathesis: $label" >&2
    "$ST" run "$BASE/openapi.json" \
        --experimental=openapi-3.1 \
        --checks not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,response_schema_conformance \
        --hypothesis-max-examples "$MAX_EXAMPLES" \
        --hypothesis-phases explicit,generate \
        --hypothesis-deadline None \
        --hypothesis-suppress-health-check too_slow,filter_too_much,data_too_large \
        --request-timeout 30000 \
        --generation-allow-x00 false \
        --workers 2 \
        --no-color \
        "$@" || status=1
}

# The backend: every operation with a secret key (POST /v1/tenants answers 403 here).
TENANT="$(create_tenant secret)"
run "secret key, every operation" --header "Authorization: Bearer $(field secretKey <<<"$TENANT")" "${EXTRA[@]}"

# The app: its operations with a client key (identity proofs, anonymous ids, rate limit).
TENANT="$(create_tenant client)"
run "client key, App operations" --header "Authorization: Bearer $(field clientKey <<<"$TENANT")" \
    --include-tag App "${EXTRA[@]}"

# A workspace key naming its tenant: every operation, POST /v1/tenants included.
TENANT="$(create_tenant workspace)"
run "workspace key + BuzzKit-Tenant, every operation" --header "Authorization: Bearer $WORKSPACE_KEY" \
    --header "BuzzKit-Tenant: $(field id <<<"$TENANT")" "${EXTRA[@]}"

if grep -q '"level":"error"' "$WORK/stderr"; then
    echo "the server logged errors:" >&2
    grep '"level":"error"' "$WORK/stderr" | head -n 20 >&2
    status=1
fi
exit "$status"
