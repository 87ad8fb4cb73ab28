# Sourced by bench/identify-threads.sh and bench/get-syscalls.sh: a work directory with a seeded
# database in it, and the server the script starts stopped when it exits.
#
# seeded_work NAME PEOPLE ANON sets:
#   WORK    bench/out/NAME.XXXXXX, on the repository's disk as run.sh's (the log's syncs are part
#           of what the server does), removed at exit with $SERVER killed if it is set;
#   TENANT  the id of tenant `bench`, whose keys tenant_field reads (`tenant_field "['clientKey']"`);
# and leaves WORK/sqlite_ceiling built and WORK/seed.sqlite seeded by it with PEOPLE identified
# and ANON anonymous people, as run.sh seeds. Needs BIN, gcc and libsqlite3-dev.
export BUZZKIT_BOOTSTRAP_WORKSPACE_KEY=bk_ws_BenchBenchBenchBenchBenchBench12
SERVER=
seeded_work() {
    local name=$1 people=$2 anon=$3
    mkdir -p bench/out
    WORK=$(mktemp -d -p bench/out "$name.XXXXXX")
    trap 'if [ -n "$SERVER" ]; then kill "$SERVER" 2>/dev/null || true; fi; rm -rf "$WORK"' EXIT
    gcc -O2 -o "$WORK/sqlite_ceiling" bench/sqlite_ceiling.c -lsqlite3
    "$BIN" migrate --database "$WORK/seed.sqlite" >/dev/null
    "$BIN" tenant create bench --database "$WORK/seed.sqlite" >"$WORK/tenant.json"
    TENANT=$(tenant_field "['tenant']['id']")
    "$WORK/sqlite_ceiling" seed "$WORK/seed.sqlite" "$TENANT" "$people" "$anon" 0 0 >/dev/null
}
tenant_field() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))$1)" "$WORK/tenant.json"; }
