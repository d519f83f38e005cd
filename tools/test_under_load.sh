#!/usr/bin/env bash
# make test-under-load: `make test` three times in a row on a busy machine, as a newcomer
# could run it, and each run's stage times.
#
#   - a fresh clone of this repository's current commit for every run (its own .venv;
#     the download caches of uv and npm are shared, as for anyone's second project);
#   - started from a background shell: `make test &` in this script, so make and all it
#     starts inherit SIGINT and SIGQUIT ignored, as a script's background job does;
#   - beside two CPU burners (`yes > /dev/null`), started here and stopped by pid.
#
# Environment: RUNS (default 3), BURNERS (default 2), TEST_COMMAND (default "make test";
# ".ci/run" as root for CI's own script), KEEP=1 to keep the clones.
# Logs: /tmp/streaming-course-load-*/run-N.log. Fails if any run failed.
set -uo pipefail
runs=${RUNS:-3}
n_burners=${BURNERS:-2}
command=${TEST_COMMAND:-make test}
repo=$(git rev-parse --show-toplevel)
work=$(mktemp -d /tmp/streaming-course-load-XXXXXX)

burners=()
stop_burners() { for pid in "${burners[@]}"; do kill "$pid" 2>/dev/null; done; }
trap stop_burners EXIT
for _ in $(seq 1 "$n_burners"); do
    yes > /dev/null &
    burners+=($!)
done

[ -z "$(git -C "$repo" status --porcelain --untracked-files=no)" ] ||
    echo "note: uncommitted changes are not in the clones (they test $(git -C "$repo" rev-parse --short HEAD))"
echo "$runs run(s) of '$command', each in a fresh clone, beside $n_burners CPU burner(s); logs in $work"

failed=0
for run in $(seq 1 "$runs"); do
    clone="$work/run-$run"
    log="$work/run-$run.log"
    git clone --quiet "$repo" "$clone"
    started=$(date +%s)
    # A simple command with & (a subshell would not do): bash starts it with SIGINT ignored.
    # shellcheck disable=SC2086  # $command is words: "make test"
    env -C "$clone" $command > "$log" 2>&1 < /dev/null &
    pid=$!
    sleep 2  # what the job runs with, once the shell has set its signals and exec'd it
    ignored=$(awk '/^SigIgn/ {print $2}' "/proc/$pid/status" 2>/dev/null)
    wait "$pid"
    status=$?
    took=$(( $(date +%s) - started ))
    result=$([ "$status" = 0 ] && echo passed || echo "FAILED ($status)")
    echo ""
    echo "run $run: $result in $((took / 60)) min $((took % 60)) s (SigIgn of the run: ${ignored:-?}, load $(cut -d' ' -f1-3 /proc/loadavg))"
    if [ -f "$clone/test-artifacts/stages/times.txt" ]; then
        cp "$clone/test-artifacts/stages/times.txt" "$work/run-$run-times.txt"
        sed 's/^/    /' "$clone/test-artifacts/stages/times.txt"
    fi
    [ "$status" = 0 ] || { failed=1; tail -n 40 "$log"; }
    [ "${KEEP:-0}" = 1 ] || rm -rf "$clone"
done
exit "$failed"
