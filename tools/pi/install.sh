#!/usr/bin/env bash
# Installs what the tests run Pi with (package.json and package-lock.json beside this script: Pi 1.6, a node 22
# binary, typescript) and links it as tools/pi/node_modules.
#
# The install lives in a cache shared by every clone, one folder per lockfile:
#   ${PICOMPACT_PI_CACHE:-${XDG_CACHE_HOME:-~/.cache}/picompact-test}/pi-<first 12 hex of the lockfile's sha256>
# `npm ci` runs only when that folder is not complete yet (about 350 MB, once); after that nothing is fetched.
#
# Exit status: 0 installed (or already there); 3 npm is not on PATH (one line on stderr says so); 1 the install
# failed (npm's output is on stderr).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$HERE"

if ! command -v npm >/dev/null 2>&1; then
  echo "npm not found: install Node.js's npm to run the 141 tests that ask Pi" >&2
  exit 3
fi

if command -v sha256sum >/dev/null 2>&1; then
  key="$(sha256sum package-lock.json | cut -c1-12)"
else
  key="$(shasum -a 256 package-lock.json | cut -c1-12)"
fi
root="${PICOMPACT_PI_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/picompact-test}"
dest="$root/pi-$key"

if [ ! -f "$dest/.complete" ]; then
  mkdir -p "$root"
  echo "installing Pi 1.6 and node 22 for the tests into $dest (npm ci, about 350 MB; once)" >&2
  work="$(mktemp -d "$root/.pi-$key.XXXXXX")"
  trap 'rm -rf "$work"' EXIT
  cp package.json package-lock.json "$work/"
  (cd "$work" && npm ci --no-audit --no-fund --prefer-offline --loglevel=error >&2)
  node_bin="$(ls "$work"/node_modules/node-linux-*/bin/node 2>/dev/null | head -1 || true)"
  if [ -z "$node_bin" ] || ! "$node_bin" --version >/dev/null 2>&1; then
    echo "error: the node 22 package installed no node that runs on this machine ($(uname -sm))" >&2
    exit 1
  fi
  touch "$work/.complete"
  # Another install may have finished first: keep the one in place.
  if ! mv -T "$work" "$dest" 2>/dev/null; then
    [ -f "$dest/.complete" ] || { rm -rf "$dest" && mv -T "$work" "$dest"; }
  fi
fi

# node_modules here is a link to the cache, so tsconfig.json and the tests find everything at one place.
if [ "$(readlink node_modules 2>/dev/null || true)" != "$dest/node_modules" ]; then
  if [ -e node_modules ] && [ ! -L node_modules ]; then rm -rf node_modules; fi
  ln -sfn "$dest/node_modules" node_modules
fi
