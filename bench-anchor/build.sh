#!/usr/bin/env bash
# Builds the libibmad anchor program (bench-anchor/anchor) against
# rdma-core's libibmad and libibumad (Debian: libibmad-dev, libibumad-dev).
# Usage: bench-anchor/build.sh [OUTPUT]   (default: bench-anchor/anchor)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
OUT="${1:-$HERE/anchor}"
CC="${CC:-cc}"
exec "$CC" -O2 -g -Wall -Wextra -std=gnu11 -o "$OUT" "$HERE/anchor.c" -libmad -libumad
