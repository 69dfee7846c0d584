#!/usr/bin/env bash
# One MPI job over several hosts: rank 0 hands out the cases, longest first, and alone
# writes the database; every other rank builds and times the cases it is given.
#   scripts/mpirun_example.sh HOSTFILE results.db scenarios/*.json
# HOSTFILE lists each host once with "slots=1": by slot, rank 0 lands on the first host and
# the one extra rank (oversubscribed) gives that host its worker too, so every host has
# one. With the default isolation a host runs one case at a time, so more ranks per host
# would only wait; to run several cases per host at once, pin them instead with
# --cores-per-worker K (ranks per host x K <= its cores).
# --enable-recovery keeps the job going when a worker dies (its case is stored as lost;
# `fusebench run --resume` runs it again later). Without it, OpenMPI ends the whole job on
# the first dead rank; the database still holds every case committed before.
# With --enable-recovery, mpirun exits 0 whatever rank 0 returned: the exit status is the
# gate's, which fails a run that lost a worker (it never finished) or has failing cases.
set -euo pipefail
hostfile="$1"; db="$2"; shift 2
hosts=$(grep -cv '^[[:space:]]*\(#\|$\)' "$hostfile")
mpirun --hostfile "$hostfile" --oversubscribe --enable-recovery -np "$((hosts + 1))" \
  fusebench run "$@" --db "$db" || true
exec fusebench gate --db "$db"
