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
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  else
    echo "tools/test.sh: missing ${need[*]}: install them with apt-get (as root) for the full suite" >&2
  fi
fi
# A second Wireshark for the parity matrix: tshark 4.4 / Lua 5.4 in a Debian 13 root, built once (about 40 s and
# 415 MB; 4 s to check afterwards) and kept outside the clone. Needs root and the Debian archive; skipped otherwise
# (the tests that need it skip too). PROTODUMP_TRIXIE=none turns it off.
TRIXIE="${PROTODUMP_TRIXIE:-/var/cache/protodump/trixie}"
if [ "$TRIXIE" != none ] && [ "$(id -u)" = 0 ] && [ ! -x "$TRIXIE/usr/bin/tshark" ]; then
  command -v debootstrap >/dev/null || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null \
    || true
  if command -v debootstrap >/dev/null; then
    mkdir -p "$(dirname "$TRIXIE")"
    rm -rf "$TRIXIE.tmp"
    if timeout 900 debootstrap --variant=minbase --include=tshark trixie "$TRIXIE.tmp" \
        "${PROTODUMP_DEBIAN_MIRROR:-http://deb.debian.org/debian}" >"$TRIXIE.log" 2>&1; then
      mv "$TRIXIE.tmp" "$TRIXIE"
    else
      echo "tools/test.sh: no Debian 13 root (debootstrap failed, see $TRIXIE.log): tshark 4.4 tests skip" >&2
      rm -rf "$TRIXIE.tmp"
    fi
  fi
fi
export PROTODUMP_TRIXIE="$TRIXIE"
python3 -m pip install -q -e '.[test]'
python3 -m pytest -q "$@"
