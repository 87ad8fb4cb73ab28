#!/usr/bin/env bash
# Checks the Dockerfile without a Docker engine: builds the release binary with the build stage's
# own command, makes a minimal Debian bookworm root with debootstrap, runs the runtime stage's RUN
# line inside it (so it holds only the packages the Dockerfile installs), copies the files the
# Dockerfile copies, then, chrooted as the image's user with the image's ENV and WORKDIR:
# `tenant create`, `serve`, the HEALTHCHECK command, one identify over HTTP, SIGTERM → exit 0,
# and the WAL checkpointed. A runtime library missing from the second stage fails it.
#
#   scripts/container-smoke.sh                # root needed (debootstrap, chroot, mount)
#   KEEP=1 scripts/container-smoke.sh         # leave the temp dir for a look afterwards
#
# The Dockerfile is read, not restated here: its package lists, COPY lines, ENV, USER, WORKDIR,
# HEALTHCHECK, ENTRYPOINT and CMD drive the run, so editing it changes what is checked. The build
# runs from scratch in the temp dir, on only the files the build stage copies; nothing is cached.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
DOCKERFILE="${DOCKERFILE:-$ROOT/Dockerfile}"
started=$(date +%s)
say() { echo "-- [$(($(date +%s) - started))s] $*"; }
fail() { echo "container-smoke: FAIL: $*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || fail "needs root (debootstrap, chroot, mount)"
for tool in python3 curl chroot mount umount; do command -v "$tool" >/dev/null || fail "$tool missing"; done
if ! command -v debootstrap >/dev/null; then
    say "installing debootstrap"
    apt-get install -y -qq debootstrap >/dev/null || { apt-get update -qq && apt-get install -y -qq debootstrap >/dev/null; }
fi

# The mirror this machine's apt already reaches (Debian's own, or the snapshot it is pinned to).
apt_uris() { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null | awk '$1 == "URIs:" || $1 == "deb" {print $2}'; }
MIRROR="${MIRROR:-$(apt_uris | grep -m1 -E '/debian/?$' || true)}"
MIRROR="${MIRROR:-http://deb.debian.org/debian}"
SECURITY_MIRROR="${SECURITY_MIRROR:-$(apt_uris | grep -m1 -E '/debian-security/?$' || true)}"
SECURITY_MIRROR="${SECURITY_MIRROR:-http://deb.debian.org/debian-security}"

# MARK: - Read the Dockerfile

# Emits bash assignments; refuses instructions it does not know, so a new one is not silently skipped.
eval "$(python3 - "$DOCKERFILE" <<'PY'
import json, re, shlex, sys

lines, joined = open(sys.argv[1]).read().split("\n"), []
current = ""
for line in lines:
    if line.lstrip().startswith("#") or not line.strip():
        continue  # Docker drops comment lines, also inside a continued instruction
    if line.rstrip().endswith("\\"):
        current += line.rstrip()[:-1] + " "
    else:
        joined.append(current + line.strip()); current = ""
stages = []
for instruction in joined:
    word, _, rest = instruction.partition(" ")
    word = word.upper(); rest = rest.strip()
    if word == "FROM":
        stages.append({"from": rest, "runs": [], "copies": [], "env": [], "other": {}})
        continue
    stage = stages[-1]
    if word == "RUN": stage["runs"].append(rest)
    elif word == "COPY":
        parts = shlex.split(rest); source = ""
        while parts[0].startswith("--"):
            flag = parts.pop(0)
            if flag.startswith("--from="): source = flag[7:]
            else: sys.exit(f"COPY flag {flag} not understood")
        for src in parts[:-1]: stage["copies"].append((source, src, parts[-1]))
    elif word == "ENV":
        stage["env"] += shlex.split(rest)
    elif word in ("USER", "WORKDIR", "ENTRYPOINT", "CMD", "HEALTHCHECK"):
        stage["other"][word] = rest
    elif word in ("VOLUME", "EXPOSE"):
        pass  # nothing to do in a chroot: the volume is a plain directory, the port is set by env
    else:
        sys.exit(f"Dockerfile instruction {word} not understood by container-smoke.sh")
if len(stages) != 2: sys.exit("expected two stages (build, runtime)")
build, runtime = stages
def q(value): return shlex.quote(value)
def array(name, values): print(f"{name}=(" + " ".join(q(v) for v in values) + ")")
if not runtime["from"].startswith("debian:bookworm"): sys.exit(f"runtime base {runtime['from']}: only debian:bookworm* is emulated")
print("BUILD_STAGE=" + q(build["from"].split()[-1]))
# Build-stage apt packages must be on this machine; the other RUN lines are run as they are.
build_packages, build_runs = [], []
for run in build["runs"]:
    match = re.search(r"apt-get install ([^&;|]*)", run)
    if match:
        build_packages += [p for p in match.group(1).split() if not p.startswith("-")]
    else:
        build_runs.append(run)
array("BUILD_PACKAGES", build_packages)
array("BUILD_RUNS", build_runs)
if any(source for source, _, _ in build["copies"]): sys.exit("COPY --from in the build stage is not emulated")
array("BUILD_COPIES", [f"{src}|{dest}" for _, src, dest in build["copies"]])
print("BUILD_WORKDIR=" + q(build["other"].get("WORKDIR", "/")))
array("RUNTIME_RUNS", runtime["runs"])
array("RUNTIME_COPIES", [f"{source}|{src}|{dest}" for source, src, dest in runtime["copies"]])
array("IMAGE_ENV", runtime["env"])
other = runtime["other"]
for key in ("USER", "WORKDIR", "ENTRYPOINT", "CMD", "HEALTHCHECK"):
    if key not in other: sys.exit(f"runtime stage has no {key}")
print("IMAGE_USER=" + q(other["USER"]))
print("IMAGE_WORKDIR=" + q(other["WORKDIR"]))
array("IMAGE_ENTRYPOINT", json.loads(other["ENTRYPOINT"]))  # exec form only: buzzkit must be PID 1
array("IMAGE_CMD", json.loads(other["CMD"]))
health = other["HEALTHCHECK"]
options, _, command = health.partition(" CMD ")
timeout = re.search(r"--timeout=(\d+)s", options)
start = re.search(r"--start-period=(\d+)s", options)
print("HEALTH_CMD=" + q(command.strip()))
print(f"HEALTH_TIMEOUT={timeout.group(1) if timeout else 30}")
print(f"HEALTH_START={start.group(1) if start else 0}")
PY
)" || fail "could not read $DOCKERFILE"

# MARK: - Temp dir, mounts, and the trap that always undoes them

TMP="$(mktemp -d /tmp/buzzkit-container-smoke.XXXXXX)"
CHROOT="$TMP/rootfs"
OUT="$TMP/out" # stands for the build stage's /out
SERVER_PID=""
cleanup() {
    local status=$?
    if [ -n "$SERVER_PID" ] && kill -0 "$SERVER_PID" 2>/dev/null; then kill -KILL "$SERVER_PID" 2>/dev/null || true; fi
    for mount in "$CHROOT/dev" "$CHROOT/proc"; do
        if mountpoint -q "$mount" 2>/dev/null; then umount "$mount" 2>/dev/null || umount -l "$mount" || true; fi
    done
    # Never delete through a mount that is still there: that would reach the host's /dev.
    if mountpoint -q "$CHROOT/dev" 2>/dev/null || mountpoint -q "$CHROOT/proc" 2>/dev/null; then
        echo "container-smoke: mounts still present under $CHROOT; not deleting $TMP" >&2
    elif [ -n "${KEEP:-}" ]; then
        echo "container-smoke: kept $TMP" >&2
    else
        rm -rf "$TMP"
    fi
    exit "$status"
}
trap cleanup EXIT INT TERM

# COPY's rules: a folder's contents go into the destination; a file into a destination ending
# in / keeps its name, otherwise takes the destination's.
docker_copy() {
    local from="$1" to="$2"
    if [ -d "$from" ]; then
        mkdir -p "$to" && cp -a "$from/." "$to"
    elif [ "${to%/}" != "$to" ]; then
        mkdir -p "$to" && cp -a "$from" "$to"
    else
        mkdir -p "$(dirname "$to")" && cp -a "$from" "$to"
    fi
}

# MARK: - Build stage

say "build stage ($BUILD_STAGE): packages ${BUILD_PACKAGES[*]} present on this machine"
for package in "${BUILD_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed" \
        || fail "build package $package is not installed here (apt-get install $package)"
done
# The build context is only what the stage COPYs, in a fresh folder: a target whose folder the
# Dockerfile forgets to copy fails here as it would in `docker build`, and nothing is cached.
SRC="$TMP/src" # stands for the build stage's WORKDIR ($BUILD_WORKDIR)
mkdir -p "$SRC"
for copy in "${BUILD_COPIES[@]}"; do
    IFS='|' read -r src dest <<<"$copy"
    [ -e "$ROOT/$src" ] || fail "the build stage copies $src, which does not exist"
    case "$dest" in /*) fail "build stage COPY to an absolute path ($dest) is not emulated" ;; esac
    docker_copy "$ROOT/$src" "$SRC/$dest"
done
say "build context: $(cd "$SRC" && ls -A | tr '\n' ' ')"
# The swift image has its toolchain under /usr; here it is wherever `swift` lives.
TOOLCHAIN_USR="$(cd "$(dirname "$(readlink -f "$(command -v swift)")")/.." && pwd)"
mkdir -p "$OUT"
for run in "${BUILD_RUNS[@]}"; do
    local_run="$(python3 -c 'import re,sys; s=sys.argv[1]; s=re.sub(r"(?<![\w/.])/out(?=/|\s|$)", sys.argv[2], s); print(s.replace("/usr/libexec/swift/", sys.argv[3] + "/libexec/swift/"))' "$run" "$OUT" "$TOOLCHAIN_USR")"
    say "build stage: RUN $local_run"
    (cd "$SRC" && bash -c "$local_run") || fail "build stage RUN failed: $run"
done
ls -l "$OUT"

# MARK: - Runtime stage: bookworm minbase + the Dockerfile's RUN

say "debootstrap --variant=minbase bookworm from $MIRROR"
debootstrap --variant=minbase bookworm "$CHROOT" "$MIRROR" >"$TMP/debootstrap.log" 2>&1 \
    || { tail -20 "$TMP/debootstrap.log"; fail "debootstrap failed"; }
# The sources debian:bookworm-slim ships with: the release, its updates and security.
rm -f "$CHROOT/etc/apt/sources.list"
cat >"$CHROOT/etc/apt/sources.list.d/debian.sources" <<EOF
Types: deb
URIs: $MIRROR
Suites: bookworm bookworm-updates
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg

Types: deb
URIs: $SECURITY_MIRROR
Suites: bookworm-security
Components: main
Signed-By: /usr/share/keyrings/debian-archive-keyring.gpg
EOF
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf" # as Docker does for a container
mount -t proc proc "$CHROOT/proc"
mount --bind /dev "$CHROOT/dev"

BASE_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin # the debian image's PATH
for run in "${RUNTIME_RUNS[@]}"; do
    say "runtime stage: RUN $run"
    chroot "$CHROOT" /usr/bin/env -i PATH="$BASE_PATH" DEBIAN_FRONTEND=noninteractive HOME=/root /bin/sh -c "$run" \
        >"$TMP/run.log" 2>&1 || { tail -20 "$TMP/run.log"; fail "runtime stage RUN failed: $run"; }
done

for copy in "${RUNTIME_COPIES[@]}"; do
    IFS='|' read -r from src dest <<<"$copy"
    if [ "$from" = build ]; then
        case "$src" in /out | /out/*) host_src="$OUT${src#/out}" ;; *) fail "COPY --from=build $src: only /out is emulated" ;; esac
    elif [ -z "$from" ]; then
        host_src="$ROOT/$src"
    else
        fail "COPY --from=$from not emulated"
    fi
    [ -e "$host_src" ] || fail "COPY source $src does not exist"
    say "runtime stage: COPY ${from:+--from=$from }$src $dest"
    docker_copy "$host_src" "$CHROOT$dest"
done
chown -R 0:0 "$CHROOT/usr/local/bin" # COPY makes files root's

say "packages in the root: $(chroot "$CHROOT" dpkg-query -W -f='${Package}\n' | wc -l) (debootstrap minbase + the RUN line)"

# MARK: - Run as the image would

passwd_line="$(grep -E "^$IMAGE_USER:" "$CHROOT/etc/passwd")" || fail "USER $IMAGE_USER does not exist in the image"
IFS=: read -r _ _ IMAGE_UID IMAGE_GID _ IMAGE_HOME _ <<<"$passwd_line"
PORT="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
# As `docker run -e`: a free loopback port instead of 0.0.0.0:8080 on this shared host.
RUN_ENV=(PATH="$BASE_PATH" HOSTNAME=buzzkit HOME="$IMAGE_HOME" "${IMAGE_ENV[@]}" BUZZKIT_HOST=127.0.0.1 BUZZKIT_PORT="$PORT")
# The prefix that runs a command in the root as USER, with the image's ENV, from WORKDIR; each
# step execs the next, so the PID of `"${IN_IMAGE[@]}" cmd &` is the command's own.
IN_IMAGE=(chroot --userspec="$IMAGE_UID:$IMAGE_GID" --groups="$IMAGE_GID" "$CHROOT" /usr/bin/env -i "${RUN_ENV[@]}"
    /bin/sh -c 'cd "$0" && exec "$@"' "$IMAGE_WORKDIR")

say "ldd ${IMAGE_ENTRYPOINT[0]} inside the root"
chroot "$CHROOT" ldd "${IMAGE_ENTRYPOINT[0]}" | tee "$TMP/ldd.txt"
if grep -q "not found" "$TMP/ldd.txt"; then fail "a runtime library is missing from the image: $(grep 'not found' "$TMP/ldd.txt" | tr -s ' \t' ' ')"; fi
for variable in "${IMAGE_ENV[@]}"; do
    case "$variable" in SWIFT_BACKTRACE=*swift-backtrace=*)
        backtracer="${variable##*swift-backtrace=}"; backtracer="${backtracer%%,*}"
        [ -x "$CHROOT$backtracer" ] || fail "SWIFT_BACKTRACE names $backtracer, which is not in the image"
        say "backtracer $backtracer is in the image" ;;
    esac
done

# https:// webhook deliveries verify against the system store (OpenSSL's default paths).
bundle=/etc/ssl/certs/ca-certificates.crt
[ -s "$CHROOT$bundle" ] || fail "no CA bundle at $bundle: https webhook deliveries could verify nothing"
say "CA bundle for https deliveries: $bundle ($(grep -c 'BEGIN CERTIFICATE' "$CHROOT$bundle") certificates)"

say "as $IMAGE_USER ($IMAGE_UID:$IMAGE_GID) in $IMAGE_WORKDIR: buzzkit tenant create smoke"
"${IN_IMAGE[@]}" "${IMAGE_ENTRYPOINT[@]}" tenant create smoke >"$TMP/tenant.json" 2>"$TMP/tenant.err" \
    || { cat "$TMP/tenant.err"; fail "tenant create failed in the image"; }
field() { python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$TMP/tenant.json" "$1"; }
CLIENT="$(field clientKey)"; SECRET="$(field secretKey)"; ISEC="$(field identitySecret)"

say "as $IMAGE_USER: ${IMAGE_ENTRYPOINT[*]} ${IMAGE_CMD[*]} (BUZZKIT_PORT=$PORT)"
"${IN_IMAGE[@]}" "${IMAGE_ENTRYPOINT[@]}" "${IMAGE_CMD[@]}" >"$TMP/serve.out" 2>"$TMP/serve.err" &
SERVER_PID=$!

say "HEALTHCHECK: $HEALTH_CMD (timeout ${HEALTH_TIMEOUT}s, start period ${HEALTH_START}s)"
deadline=$(($(date +%s) + HEALTH_START + 5))
until "${IN_IMAGE[@]}" timeout "$HEALTH_TIMEOUT" /bin/sh -c "$HEALTH_CMD" >"$TMP/health.out" 2>&1; do
    kill -0 "$SERVER_PID" 2>/dev/null || { cat "$TMP/serve.err"; fail "buzzkit serve exited before it was healthy"; }
    [ "$(date +%s)" -lt "$deadline" ] || { cat "$TMP/health.out" "$TMP/serve.err"; fail "HEALTHCHECK never passed"; }
    sleep 0.5
done
echo "healthcheck: $(cat "$TMP/health.out")"

say "identify over HTTP (client key and a proof made by the image's buzzkit identity-hash)"
HASH="$("${IN_IMAGE[@]}" "${IMAGE_ENTRYPOINT[@]}" identity-hash --secret "$ISEC" user_smoke)"
ANON=anon_V1StGXR8_Z5jdHi6Bsmk1
status="$(curl -sS -o "$TMP/identify.json" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/identify" \
    -H "Authorization: Bearer $CLIENT" -H 'Content-Type: application/json' \
    -d "{\"externalId\":\"user_smoke\",\"anonymousId\":\"$ANON\",\"identityHash\":\"$HASH\"}")"
echo "identify: HTTP $status $(head -c 300 "$TMP/identify.json")"
[ "$status" = 200 ] || fail "identify answered $status"
status="$(curl -sS -o "$TMP/read.json" -w '%{http_code}' "http://127.0.0.1:$PORT/v1/subscribers/$ANON" -H "Authorization: Bearer $SECRET")"
python3 -c 'import json,sys; d=json.load(open(sys.argv[1]))["data"]; assert d["subscriber"]["id"]=="user_smoke", d' "$TMP/read.json" \
    || fail "reading the anonymous id back did not resolve to user_smoke (HTTP $status)"
echo "read back: HTTP $status, $ANON resolves to user_smoke"

# The signal must reach buzzkit itself, as it does as PID 1 of a container, not a wrapper.
[ "$(cat /proc/$SERVER_PID/comm)" = buzzkit ] || fail "PID $SERVER_PID is $(cat /proc/$SERVER_PID/comm), not buzzkit"
say "SIGTERM to buzzkit (PID $SERVER_PID)"
kill -TERM "$SERVER_PID"
set +e
wait "$SERVER_PID"
exit_status=$?
set -e
SERVER_PID=""
echo "exit status: $exit_status"
tail -3 "$TMP/serve.err"
[ "$exit_status" = 0 ] || { cat "$TMP/serve.err"; fail "buzzkit exited $exit_status after SIGTERM"; }

database="$(printf '%s\n' "${IMAGE_ENV[@]}" | sed -n 's/^BUZZKIT_DATABASE=//p')"
[ -s "$CHROOT$database" ] || fail "no database at $database"
owner="$(stat -c %u "$CHROOT$database")"
[ "$owner" = "$IMAGE_UID" ] || fail "$database is owned by uid $owner, not $IMAGE_USER"
if [ -s "$CHROOT$database-wal" ]; then fail "$database-wal holds $(stat -c %s "$CHROOT$database-wal") bytes after shutdown: not checkpointed"; fi
echo "WAL: $(if [ -e "$CHROOT$database-wal" ]; then echo "$database-wal is empty"; else echo "$database-wal is gone"; fi); database $(stat -c %s "$CHROOT$database") bytes, owned by $IMAGE_USER"

say "container smoke passed"
