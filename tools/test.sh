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
python3 -m pip install -q -e '.[test]'
python3 -m pytest -q "$@"
