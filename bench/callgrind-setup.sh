# Sourced by the callgrind harnesses (bench/*-instructions.sh), after `set -euo pipefail`: from
# the repository's root, BIN (the release build, or BUZZKIT_BINARY), valgrind checked, and OUT
# (the directory the callgrind files go to) made.
cd "$(dirname "$0")/.."
BIN=${BUZZKIT_BINARY:-.build/release/buzzkit}
[ -x "$BIN" ] || { echo "no $BIN: swift build -c release --product buzzkit"; exit 1; }
command -v valgrind >/dev/null || { echo "needs valgrind"; exit 1; }
OUT=${OUT:-$(mktemp -d)}
mkdir -p "$OUT"  # valgrind cannot create it, and the server would then never start
