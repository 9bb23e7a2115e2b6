#!/usr/bin/env bash
# Installs what the tests run Pi with (package.json and package-lock.json beside this script: Pi 1.6, a node 22
# binary, typescript) and links it as tools/pi/node_modules.
#
# The install lives in a cache shared by every clone, one folder per lockfile:
#   ${PICOMPACT_PI_CACHE:-${XDG_CACHE_HOME:-~/.cache}/picompact-test}/pi-<first 12 hex of the lockfile's sha256>
# `npm ci` runs only when that folder is not complete yet (about 350 MB, once); after that nothing is fetched.
#
# An install is used only when it is complete and this user's alone (the cache folder, the install and its
# node_modules real directories owned by this user and closed to group and world writes, .complete theirs too);
# anything else there is set aside and installed again; a cache folder of this user's open to others is closed
# (chmod go-w), one that is a link or another user's is refused.
# A kill (INT, TERM, HUP) during `npm ci` stops npm and everything it started, and removes the work folder.
#
# Exit status: 0 installed (or already there); 3 npm is not on PATH (one line on stderr says so); 1 the install
# failed (npm's output is on stderr), or the cache folder is not this user's.
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

# Only a folder of this user's, that no one else may write to, is trusted: what it holds is run by the tests.
# (A link, another user's folder, or one open to the group or the world may hold what someone else put there.)
me="$(id -u)"
owned() {  # owned PATH: a real directory (not a link) of this user, not writable by group or others
  [ -d "$1" ] && [ ! -L "$1" ] || return 1
  local uid mode
  uid="$(stat -c %u "$1" 2>/dev/null || stat -f %u "$1")"
  mode="$(stat -c %a "$1" 2>/dev/null || stat -f %Lp "$1")"
  [ "$uid" = "$me" ] && [ $((8#$mode & 8#022)) -eq 0 ]
}
trusted_install() {  # trusted_install DIR: complete, and every part of it that is run or linked is this user's
  [ -f "$1/.complete" ] && [ ! -L "$1/.complete" ] && owned "$1" && owned "$1/node_modules" || return 1
  [ "$(stat -c %u "$1/.complete" 2>/dev/null || stat -f %u "$1/.complete")" = "$me" ]
}

[ -e "$root" ] || [ -L "$root" ] || (umask 022 && mkdir -p "$root")
# A folder of this user's that is open to others is closed first: what others put in it is then not trusted below.
if [ -d "$root" ] && [ ! -L "$root" ] && [ "$(stat -c %u "$root" 2>/dev/null || stat -f %u "$root")" = "$me" ]; then
  chmod go-w "$root"
fi
if ! owned "$root"; then
  echo "error: $root is not a folder of yours (a link, or another user's): not using it;" \
    "set PICOMPACT_PI_CACHE to a folder of your own" >&2
  exit 1
fi
if [ -e "$dest" ] || [ -L "$dest" ]; then
  if ! trusted_install "$dest"; then
    # Incomplete, or not provably this user's: set it aside (a rename needs only $root) and install afresh.
    echo "warning: $dest is incomplete or not only yours: installing again" >&2
    aside="$root/.stale-pi-$key.$$"
    mv -T "$dest" "$aside" && { rm -rf "$aside" 2>/dev/null || true; }
  fi
fi

if [ ! -f "$dest/.complete" ]; then
  echo "installing Pi 1.6 and node 22 for the tests into $dest (npm ci, about 350 MB; once)" >&2
  work="$(mktemp -d "$root/.pi-$key.XXXXXX")"
  npm_pid=""
  cleanup() {  # the work folder goes, and npm with everything it started, however this script ends
    if [ -n "$npm_pid" ]; then
      kill -TERM -- "-$npm_pid" 2>/dev/null || kill -TERM "$npm_pid" 2>/dev/null || true
      wait "$npm_pid" 2>/dev/null || true
      npm_pid=""
    fi
    rm -rf "$work"
  }
  trap cleanup EXIT
  for sig in INT TERM HUP; do
    trap "cleanup; trap - $sig EXIT; kill -$sig \$\$" "$sig"
  done
  cp package.json package-lock.json "$work/"
  # In the background, in its own process group, so that a signal to this script is handled at once (bash runs a
  # trap only after the foreground command ends) and reaches every process npm started.
  set -m
  (cd "$work" && exec npm ci --no-audit --no-fund --prefer-offline --loglevel=error >&2) &
  npm_pid=$!
  set +m
  wait "$npm_pid"
  npm_pid=""
  node_bin="$(ls "$work"/node_modules/node-linux-*/bin/node 2>/dev/null | head -1 || true)"
  if [ -z "$node_bin" ] || ! "$node_bin" --version >/dev/null 2>&1; then
    echo "error: the node 22 package installed no node that runs on this machine ($(uname -sm))" >&2
    exit 1
  fi
  chmod go-w "$work" "$work/node_modules"  # what trusted_install asks of it, whatever the umask
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
