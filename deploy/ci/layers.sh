#!/usr/bin/env bash
# Fails on an import that goes up a floor (deploy/ci/layers.txt holds the
# allowed graph). Test files are not checked: a test may reach any floor.
set -euo pipefail
cd "$(dirname "$0")/../.."
mod="$(go list -m)"
go list -f '{{.ImportPath}}{{range .Imports}} {{.}}{{end}}' ./... | awk -v mod="$mod/" '
  FNR == NR {
    if ($0 ~ /^[[:space:]]*(#|$)/) next
    floor[$2] = $1; next
  }
  function group(p,   best, k) {
    best = ""
    for (k in floor) if ((p == k || index(p, k "/") == 1) && length(k) > length(best)) best = k
    return best
  }
  {
    if (index($1, mod) != 1) next
    from = substr($1, length(mod) + 1); gf = group(from)
    if (gf == "") { printf "layers: %s is on no floor: add its prefix to deploy/ci/layers.txt\n", from; bad++; next }
    for (i = 2; i <= NF; i++) {
      if (index($i, mod) != 1) continue
      to = substr($i, length(mod) + 1); gt = group(to)
      if (gt == "") { printf "layers: %s is on no floor: add its prefix to deploy/ci/layers.txt\n", to; bad++; continue }
      if (gt == gf) continue
      if (floor[gt] + 0 <= floor[gf] + 0) {
        printf "layers: %s (floor %s, %s) imports %s (floor %s, %s): an import may only go down\n", from, floor[gf], gf, to, floor[gt], gt
        bad++
      }
    }
  }
  END { if (bad) { printf "layers: %d upward imports\n", bad; exit 1 } }
' deploy/ci/layers.txt -

# primectl speaks the API through api/client and the wire types: it links
# no store and no database driver.
if db="$(go list -deps ./cmd/primectl | grep -E '^(gorm\.io/|github\.com/jackc/pgx|modernc\.org/sqlite|github\.com/libtnb/sqlite|github\.com/primerhq/primer/models$)')"; then
  echo "layers: primectl links the store or a database driver:"; echo "$db"; exit 1
fi
