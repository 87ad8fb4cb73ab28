#!/usr/bin/env bash
# Fuzzes the HTTP1 wire format with libFuzzer + AddressSanitizer.
#
# Usage: scripts/fuzz-parser.sh [seconds]      (default 60)
#   FUZZ_OPT=-O scripts/fuzz-parser.sh 600     (faster, but without stdlib debug bounds checks)
#
# Builds fuzz/ParserFuzz.swift together with Sources/HTTP1/*.swift as one module (StringBytes,
# which HTTP1 imports, as a library beside it) into
# .build-fuzz/, runs it on fuzz/corpus (seeds, checked in) plus fuzz/corpus-work (what it finds,
# not checked in). Crashes are written to fuzz/out/; reproduce one with
# `.build-fuzz/parser-fuzz fuzz/out/crash-…`.
set -euo pipefail
cd "$(dirname "$0")/.."

seconds="${1:-60}"
opt="${FUZZ_OPT:--Onone}"
swiftc="${SWIFTC:-$(command -v swiftc || echo /opt/swift/usr/bin/swiftc)}"
out=.build-fuzz

mkdir -p "$out" fuzz/corpus-work fuzz/out
# HTTP1's one dependency, StringBytes, as its own module first (HTTP1 imports it).
"$swiftc" -sanitize=address -parse-as-library "$opt" -g \
    -module-name StringBytes -package-name buzzkit_server \
    Sources/StringBytes/*.swift -emit-module -emit-module-path "$out/StringBytes.swiftmodule" \
    -emit-library -static -module-cache-path "$out/module-cache" -o "$out/libStringBytes.a"
"$swiftc" -sanitize=fuzzer,address -parse-as-library "$opt" -g \
    -module-name HTTP1Fuzz -package-name buzzkit_server \
    Sources/HTTP1/*.swift fuzz/ParserFuzz.swift \
    -I "$out" -L "$out" -lStringBytes \
    -module-cache-path "$out/module-cache" -o "$out/parser-fuzz"

# libFuzzer reports crashes itself; the Swift backtracer would wait on a terminal.
export SWIFT_BACKTRACE=enable=no
exec "$out/parser-fuzz" \
    -max_total_time="$seconds" -max_len=4096 -timeout=10 \
    -dict=fuzz/http.dict -artifact_prefix=fuzz/out/ -print_final_stats=1 \
    fuzz/corpus-work fuzz/corpus
