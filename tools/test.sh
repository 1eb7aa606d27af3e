#!/usr/bin/env bash
# Installs what the tests need on a fresh Debian machine, then runs them. Used by the README and by .ci/run.
set -euo pipefail
cd "$(dirname "$0")/.."
need=()
command -v tshark >/dev/null || need+=(tshark)
command -v tcpdump >/dev/null || need+=(tcpdump)
command -v luac5.2 >/dev/null || need+=(lua5.2)
command -v luac5.4 >/dev/null || need+=(lua5.4)
command -v ip >/dev/null || need+=(iproute2)
command -v ethtool >/dev/null || need+=(ethtool)
ldconfig -p 2>/dev/null | grep -q 'libenet\.so\.7' || need+=(libenet7)     # the range coder's exact oracle
# --- session report (issue 13): a real headless browser opens the HTML report (tests/test_report.py) ---
command -v chromium >/dev/null || need+=(chromium)
# --- end of the session report block ---
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "tools/test.sh: missing ${need[*]}: install them with apt-get (as root) for the full suite" >&2
  fi
fi
# A second Wireshark for the parity matrix, in a Debian root built once (about 40 s and 415 MB; kept outside the
# clone): Debian 13's tshark 4.4 / Lua 5.4 when the system's is 4.0, Debian 12's 4.0 / Lua 5.2 when it is newer.
# Needs root and the Debian archive; skipped otherwise (the tests that need it skip too).
# PROTODUMP_WIRESHARK_ROOT=none turns it off; PROTODUMP_WIRESHARK_ROOT=DIR uses (or builds) that root.
case "$(tshark --version 2>/dev/null | head -1)" in
  *" 4.0."*|*" 3."*) SUITE=trixie ;;
  *) SUITE=bookworm ;;
esac
ROOTFS="${PROTODUMP_WIRESHARK_ROOT:-/var/cache/protodump/$SUITE}"
if [ "$ROOTFS" != none ] && [ "$(id -u)" = 0 ] && [ ! -x "$ROOTFS/usr/bin/tshark" ]; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
    || true
  if command -v debootstrap >/dev/null; then
    mkdir -p "$(dirname "$ROOTFS")"
    rm -rf "$ROOTFS.tmp"
    if timeout 900 debootstrap --variant=minbase --include=tshark "$SUITE" "$ROOTFS.tmp" \
        "${PROTODUMP_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$ROOTFS.log" 2>&1; then
      mv "$ROOTFS.tmp" "$ROOTFS"
    else
      echo "tools/test.sh: no Debian $SUITE root (debootstrap failed, see $ROOTFS.log): its tshark tests skip" >&2
      rm -rf "$ROOTFS.tmp"
    fi
  fi
fi
[ "$ROOTFS" = none ] || export PROTODUMP_WIRESHARK_ROOT="$ROOTFS"
# The optional compiled hot path (python -m protodump.compiled build) needs Cython >= 3, which pyenet's metadata
# refuses in this interpreter: a venv of its own that sees this interpreter's packages builds it in
# tests/test_compiled.py. Without the network it is not made, and those tests skip.
CYVENV="${PROTODUMP_CYTHON_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/protodump-cython}"
if [ ! -x "$CYVENV/bin/cython" ]; then
  { python3 -m venv --system-site-packages "$CYVENV" && PIP_ROOT_USER_ACTION=ignore "$CYVENV/bin/python" -m pip \
      install -q 'cython>=3'; } >/dev/null 2>&1 || echo "tools/test.sh: no Cython 3 venv: compiled-path tests skip" >&2
fi
if [ -x "$CYVENV/bin/cython" ]; then export PROTODUMP_CYTHON_PYTHON="$CYVENV/bin/python"; fi
PIP_ROOT_USER_ACTION=ignore python3 -m pip install -q -e '.[test,dask]'     # dask: pandas, pyarrow and dask.distributed too
python3 -m pytest -q "$@"
