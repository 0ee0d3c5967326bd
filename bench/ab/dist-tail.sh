#!/usr/bin/env bash
# Bench 12's end of run, two or more checkouts alternated: per run the wall time (GO to the last worker's exit), the
# run's last record commit, the last exit, and the tail between them (ms), with CPU per item and the load. Each root's
# own bench/dist/distributed-profile.js (a fresh TestServer per run, 2,000 × 200 ms, 16 per worker).
#   bash bench/ab/dist-tail.sh <rounds> <workers> <root> [<root>…]
rounds=$1; w=$2; shift 2
for r in $(seq 1 $rounds); do
  if [ $((r % 2)) -eq 1 ]; then order="$@"; else order=$(echo "$@" | tr ' ' '\n' | tac | tr '\n' ' '); fi
  for root in $order; do
    out=$(node $root/bench/dist/distributed-profile.js $w 2000 200 16)
    echo "$out" | awk -v root=$root -v r=$r '
      /^worker:/ { for (i=1;i<=NF;i++) { if ($i=="record") lr=$(i+1)+0; if ($i=="exit") ex=$(i+1)+0 } if (lr>mlr) mlr=lr; if (ex>mex) mex=ex; n++ }
      /done,/ { match($0, /([0-9]+) ms wall/); wall=substr($0, RSTART, RLENGTH); match($0, /load .*/); load=substr($0, RSTART) ; match($0, /[0-9]+ µs CPU\/item in the workers, [0-9]+ in PostgreSQL/); cpu=substr($0,RSTART,RLENGTH)}
      END { printf "round %d %s: %s, last record %d, last exit %d, tail %d ms; %s; %s\n", r, root, wall, mlr, mex, mex-mlr, cpu, load }'
  done
done
