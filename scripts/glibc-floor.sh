#!/usr/bin/env bash
# The glibc a binary needs: the highest GLIBC_x.y version among the symbols it imports
# (`readelf --dyn-syms`, else `objdump -T`), checked against a floor (issue #38: the release
# binary must start on glibc 2.17, manylinux2014: CentOS 7, Amazon Linux 2, RHEL 8, Ubuntu 20.04).
#
#   scripts/glibc-floor.sh BINARY [MAX]     # default MAX 2.17
#
# Prints the highest version and the symbols that need it; exit 0 at or below MAX, 1 above,
# 2 usage error or a file that is not a dynamic ELF with versioned glibc symbols.
set -euo pipefail

usage() { sed -n '2,9p' "$0" | sed 's/^# \{0,1\}//'; }
case "${1:-}" in
  -h|--help) usage; exit 0 ;;
  '') usage >&2; exit 2 ;;
esac
bin=$1
max=${2:-2.17}
if [ ! -f "$bin" ]; then
  echo "glibc-floor: $bin: no such file" >&2
  exit 2
fi

# One "VERSION SYMBOL" line per imported symbol with a GLIBC_ version, from whichever tool
# is installed (binutils has both; readelf is in more minimal images).
if command -v readelf >/dev/null 2>&1; then
  syms=$(readelf --dyn-syms --wide "$bin" 2>/dev/null \
    | awk '$7 == "UND" { n = split($8, a, "@"); v = a[n]; if (v ~ /^GLIBC_[0-9]/) { sub(/^GLIBC_/, "", v); sub(/ .*/, "", v); print v, a[1] } }')
elif command -v objdump >/dev/null 2>&1; then
  syms=$(objdump -T "$bin" 2>/dev/null \
    | awk '/\*UND\*/ { for (i = 1; i <= NF; i++) if ($i ~ /^\(?GLIBC_[0-9]/) { v = $i; gsub(/[()]/, "", v); sub(/^GLIBC_/, "", v); print v, $NF } }')
else
  echo "glibc-floor: neither readelf nor objdump is installed (binutils)" >&2
  exit 2
fi
if [ -z "$syms" ]; then
  echo "glibc-floor: $bin imports no versioned glibc symbol (not a dynamic glibc ELF?)" >&2
  exit 2
fi

# Versions compared part by part (2.9 < 2.17), by sort -V.
highest=$(printf '%s\n' "$syms" | cut -d' ' -f1 | sort -uV | tail -n1)
needing=$(printf '%s\n' "$syms" | awk -v v="$highest" '$1 == v { print $2 }' | sort -u | tr '\n' ' ')
echo "glibc-floor: $bin needs glibc $highest (${needing% })"
if [ "$(printf '%s\n%s\n' "$highest" "$max" | sort -V | tail -n1)" != "$max" ]; then
  echo "glibc-floor: above the floor $max: this binary will not start on glibc $max" >&2
  exit 1
fi
echo "glibc-floor: at or below $max"
