#!/usr/bin/env bash
# Database faults against the running server: disk full, SQLITE_BUSY, read-only, I/O errors.
#   A. a size-limited tmpfs holds the database and a ballast file of half its size: fill it
#      until writes get 503, check reads, free the ballast, check writes resume; then
#      SQLITE_BUSY; then integrity and no lost acknowledged write (db_faults.py).
#   B. the same tmpfs remounted read-only: start the server on it (io_faults.py readonly).
#   C. ext4 on a loop device whose backing file is cut under the running server: EIO on
#      writes (io_faults.py ioerror).
# Needs root (mount, losetup). Prints each check and PASS/FAIL per part; exits non-zero on any FAIL.
#
# usage: [ONLY=ABC] scripts/reliability/disk-full.sh [SIZE_MB]   (tmpfs size, default 8)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
size_mb="${1:-8}"
only="${ONLY:-ABC}"
work="$(mktemp -d /tmp/buzzkit-diskfull.XXXXXX)"
mnt="$work/mnt"; ext="$work/ext4"
mkdir -p "$mnt" "$ext"
loop=""
cleanup() {
  mountpoint -q "$mnt" && umount -l "$mnt"
  mountpoint -q "$ext" && umount -l "$ext"
  [ -n "$loop" ] && losetup -d "$loop" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
status=0

if ! mount -t tmpfs -o "size=${size_mb}m" tmpfs "$mnt"; then
  echo "cannot mount a tmpfs here (needs root / CAP_SYS_ADMIN)"; exit 1
fi
echo "filesystem: tmpfs size=${size_mb}m at $mnt"

if [[ $only == *A* ]]; then
  echo "== A. disk full and SQLITE_BUSY"
  # The ballast is half the filesystem: once freed, a checkpoint can copy the WAL into the
  # database file (WAL mode needs room for both).
  dd if=/dev/zero of="$mnt/ballast" bs=1M count=$(( size_mb / 2 )) status=none
  python3 "$here/db_faults.py" "$mnt" "$mnt/ballast" || status=1
fi

if [[ $only == *B* ]]; then
  echo "== B. read-only database"
  [ -e "$mnt/buzzkit.sqlite" ] || python3 -c "import sqlite3,sys; sqlite3.connect(sys.argv[1]).execute('pragma journal_mode=wal')" "$mnt/buzzkit.sqlite"
  mount -o remount,ro "$mnt"
  python3 "$here/io_faults.py" readonly "$mnt" || status=1
fi

if [[ $only == *C* ]]; then
  echo "== C. I/O errors (ext4 on a loop device cut short under the server)"
  truncate -s 64m "$work/fs.img"
  mkfs.ext4 -q "$work/fs.img"
  if loop="$(losetup --find --show "$work/fs.img")" && blockdev --setrw "$loop" && mount "$loop" "$ext"; then
    python3 "$here/io_faults.py" ioerror "$ext" "$loop" "$work/fs.img" || status=1
  else
    echo "loop devices not available here: part C skipped"
  fi
fi
echo; [ $status -eq 0 ] && echo "disk-full.sh: PASS" || echo "disk-full.sh: FAIL"
exit $status
