# nemotron resilience: sourced by the batch script of a job with [resilience] (docs/resilience.md).
# Set before sourcing: NR_DIR NR_MAX_RESTARTS NR_STALL_TIMEOUT (0: no watchdog) NR_STARTUP_TIMEOUT
# NR_MAX_EXCLUDED. Records go to $NR_DIR/attempts.jsonl, one JSON object a line.
# The functions work under the caller's `set -euo pipefail` (the Ray template's) and `set -x`.
NR_ATTEMPT=${SLURM_RESTART_COUNT:-0}
# The job as Slurm's commands should name it. An array task (a sweep's point) is ARRAY_TASK:
# its SLURM_JOB_ID may be the array's own id, which scontrol and squeue read as every task.
NR_JOB=${SLURM_ARRAY_TASK_ID:+${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID}}
NR_JOB=${NR_JOB:-$SLURM_JOB_ID}
NR_HB="$NR_DIR/heartbeat/a$NR_ATTEMPT"
NR_FREE_MOVES=3  # moves off an excluded node that do not count as restarts (then they do)

_nr_str() {  # a JSON string (our values are node names, numbers and our own words)
  local s=${1//\\/\\\\}
  s=${s//\"/\\\"}
  printf '"%s"' "$(printf '%s' "$s" | tr -d '\000-\037')"
}

_nr_record() {  # _nr_record EVENT key json-value ...: one line of attempts.jsonl
  local line="{\"event\": \"$1\", \"attempt\": $NR_ATTEMPT, \"job_id\": $(_nr_str "$NR_JOB")"
  shift
  while [ $# -ge 2 ]; do line+=", \"$1\": $2"; shift 2; done
  printf '%s, "t": %s}\n' "$line" "$(date +%s.%N)" >> "$NR_DIR/attempts.jsonl"
}

_nr_excluded() {  # the nodes excluded so far, comma-separated
  [ -s "$NR_DIR/excluded" ] && paste -sd, "$NR_DIR/excluded"
}

_nr_exclude() {  # add nodes (comma-separated) to the excluded set, up to NR_MAX_EXCLUDED
  local node
  for node in ${1//,/ }; do
    grep -qx -- "$node" "$NR_DIR/excluded" 2>/dev/null && continue
    [ "$(cat "$NR_DIR/excluded" 2>/dev/null | wc -l)" -ge "$NR_MAX_EXCLUDED" ] && {
      echo "nemotron: not excluding $node: resilience.max_excluded_nodes ($NR_MAX_EXCLUDED) reached" >&2
      continue; }
    echo "$node" >> "$NR_DIR/excluded"
  done
}

_nr_bad_nodes() {  # of the nodes $1 (a Slurm node list), those Slurm now has down, drained or failing
  [ -n "$1" ] || return 0
  sinfo -h -N -n "$1" -t down,drain,draining,fail,no_respond -o %N 2>/dev/null | sort -u | paste -sd,
}

_nr_row() {  # $1: an attempt. "STATE|NODES" of its accounting row (one row per attempt), once final
  local line tries
  # slurmdbd has it a moment after Slurm ended the attempt; wait briefly (all of this runs
  # within Slurm's KillWait after its TERM)
  for tries in 1 2 3 4 5 6; do
    line=$(sacct -n -P -D -X -j "$NR_JOB" -o State,NodeList 2>/dev/null | sed -n "$(($1 + 1))p")
    case "${line%%|*}" in ""|RUNNING*|PENDING*) sleep 0.25 ;; *) break ;; esac
  done
  echo "$line"
}

_nr_lost_nodes() {  # $1: an attempt Slurm ended, $2: its nodes [, $3: its _nr_row if read]. The nodes it lost.
  local bad line
  bad=$(_nr_bad_nodes "$2")
  [ -n "$bad" ] && { echo "$bad"; return; }
  # A site with ReturnToService=2 puts a downed node back at its next ping, before this
  # runs; accounting still says NODE_FAIL. Of a multi-node allocation it does not say
  # which node failed: then none is excluded.
  line=${3:-$(_nr_row "$1")}
  case "$line" in
    NODE_FAIL\|*,* | NODE_FAIL\|*\[*) ;;
    NODE_FAIL\|*) echo "${line#*|}" ;;
  esac
}

_nr_requeue() {  # $1: true when Slurm requeued the job itself. Requeue it, away from the excluded nodes.
  local excluded tries
  # Slurm's requeue sends TERM to every process of the job, our own short-lived commands
  # too (a killed `seq` or `paste` once left the exclusion unset): so what the loop needs
  # is read before, and after the requeue only builtins and retried commands run.
  excluded=$(_nr_excluded)
  $1 || scontrol requeue "$NR_JOB"
  # Slurm takes updates of a job only once the requeue has made it pending again, a
  # moment after `scontrol requeue` returns: try for up to 10 s, or the next attempt
  # could land on the node just excluded (nemotron_attempt_begin moves it if it does).
  if [ -n "$excluded" ]; then
    for ((tries = 0; tries < 40; tries++)); do
      scontrol update jobid="$NR_JOB" ExcNodeList="$excluded" 2>/dev/null && break
      sleep 0.25
    done
  fi
  scontrol update jobid="$NR_JOB" StartTime=now 2>/dev/null || true
  echo "nemotron: requeued job $NR_JOB for attempt $((NR_ATTEMPT + 1)) (excluding: ${excluded:-none})"
}

_nr_used() {  # restarts used: attempts so far, less the moves off an excluded node (up to NR_FREE_MOVES)
  local moves
  moves=$(grep -c '"kind": "moved"' "$NR_DIR/attempts.jsonl" 2>/dev/null)
  moves=${moves:-0}; [ "$moves" -gt "$NR_FREE_MOVES" ] && moves=$NR_FREE_MOVES
  echo $((NR_ATTEMPT - moves))
}

_nr_restarts() {  # how often Slurm has requeued this job (scontrol's Restarts=)
  scontrol show job -o "$NR_JOB" 2>/dev/null | tr ' ' '\n' | sed -n 's/^Restarts=//p'
}

_nr_summary() {  # every attempt and how it ended, readable, to stderr and $NR_DIR/summary.txt
  {
    echo "nemotron: job $NR_JOB gave up after $((NR_ATTEMPT + 1)) attempt(s) ($1):"
    sed -n 's/.*"event": "end", "attempt": \([0-9]*\),.*"reason": "\([^"]*\)".*/  attempt \1: \2/p' \
      "$NR_DIR/attempts.jsonl"
  } | tee "$NR_DIR/summary.txt" >&2
}

_nr_signal_cause() {  # $1: the signal training stopped on, $2: its checkpoint step. Sets the caller's kind and reason.
  if [ "$1" = TERM ]; then kind=preempted; reason="requeued from outside (preemption or scontrol requeue): checkpoint at step $2"
  else kind=timelimit; reason="time-limit warning (SIG$1): checkpoint at step $2"; fi
}

nemotron_attempt_begin() {  # record this attempt; close the one Slurm ended without us
  local - prev line state nodes bad kind reason step why used here=""
  set +xeu
  mkdir -p "$NR_HB"
  rm -f "$NR_DIR/stop_request"
  prev=$((NR_ATTEMPT - 1))
  if [ "$NR_ATTEMPT" -gt 0 ] && ! grep -q "\"event\": \"end\", \"attempt\": $prev," "$NR_DIR/attempts.jsonl" 2>/dev/null; then
    line=$(_nr_row "$prev")
    state=${line%%|*}; state=${state%% *}; nodes=${line#*|}
    bad=$(_nr_lost_nodes "$prev" "$nodes" "$line")
    [ "$state" = NODE_FAIL ] && kind=node_fail || kind=requeued
    reason="ended by Slurm (${state:-unknown}) on ${nodes:-?}${bad:+; down: $bad}"
    step=""
    # Training saw the signal and saved its checkpoint, but the attempt was killed (after
    # Slurm's KillWait) before it wrote its own record: what it saw still says why.
    if [ "$kind" = requeued ] && [ -s "$NR_DIR/stopped-a$prev" ]; then
      read -r step why < "$NR_DIR/stopped-a$prev"
      _nr_signal_cause "$why" "$step"
    fi
    [ -n "$bad" ] && _nr_exclude "$bad"
    NR_ATTEMPT=$prev _nr_record end kind "$(_nr_str "$kind")" \
      reason "$(_nr_str "$reason; recorded by the next attempt")" \
      step "$(_nr_str "$step")" node "$(_nr_str "$bad")" requeue true
  fi
  _nr_record start nodes "$(_nr_str "$SLURM_JOB_NODELIST")" exclude "$(_nr_str "$(_nr_excluded)")"
  used=$(_nr_used)
  echo "nemotron: attempt $NR_ATTEMPT (restarts left: $((NR_MAX_RESTARTS - used))) on $SLURM_JOB_NODELIST; excluded nodes: $(_nr_excluded || echo none)"
  if [ "$used" -gt "$NR_MAX_RESTARTS" ]; then
    _nr_record end kind '"exhausted"' reason "$(_nr_str "not run: resilience.max_restarts ($NR_MAX_RESTARTS) reached")" requeue false
    _nr_summary "resilience.max_restarts = $NR_MAX_RESTARTS reached"
    exit 1
  fi
  # Slurm may place this attempt on a node excluded after it was requeued (the exclusion
  # is refused until the job is pending; the last attempt's shell may have been killed
  # first): never train there, move.
  [ -s "$NR_DIR/excluded" ] && here=$( { scontrol show hostnames "$SLURM_JOB_NODELIST" 2>/dev/null \
    || echo "$SLURM_JOB_NODELIST"; } | grep -Fx -f "$NR_DIR/excluded" | paste -sd,)
  if [ -n "$here" ]; then
    _nr_record end kind '"moved"' reason "$(_nr_str "placed on excluded node(s) $here; requeued without running")" \
      node '""' requeue true exclude "$(_nr_str "$(_nr_excluded)")"
    echo "nemotron: attempt $NR_ATTEMPT was placed on excluded node(s) $here; not running there"
    trap 'nemotron_on_signal TERM' TERM  # the caller's traps come after this function
    _nr_requeue false
    exit 0
  fi
}

nemotron_on_signal() {  # USR1 (time-limit warning, or a test's scancel --batch) and TERM (requeue, cancel)
  echo "$1 $(date +%s.%N)" >> "$NR_DIR/signals-a$NR_ATTEMPT"
  [ "$1" = TERM ] || echo "$1" > "$NR_DIR/stop_request"
}

nemotron_watchdog() {  # $1: the training step's srun pid. Ends the step when a rank's heartbeat stops.
  local - pid=$1 start now period f step phase t node rank age limit worst
  set +xeu
  start=$(date +%s)
  period=$((NR_STALL_TIMEOUT / 4)); [ "$period" -lt 1 ] && period=1; [ "$period" -gt 10 ] && period=10
  while kill -0 "$pid" 2>/dev/null; do
    sleep "$period"
    now=$(date +%s); worst=""
    for f in "$NR_HB"/rank-*; do
      [ -e "$f" ] || continue
      read -r step phase t node rank < "$f" || continue
      t=${t%%.*}; age=$((now - t))
      case "$phase" in step) limit=$NR_STALL_TIMEOUT ;; init|save|eval|between) limit=$NR_STARTUP_TIMEOUT ;; *) continue ;; esac
      [ "$age" -gt "$limit" ] || continue
      # the rank that fell behind: lowest step, then the oldest heartbeat
      if [ -z "$worst" ] || [ "$step" -lt "${worst%% *}" ] || { [ "$step" -eq "${worst%% *}" ] && [ "$age" -gt "$(echo "$worst" | cut -d' ' -f4)" ]; }; then
        worst="$step $rank $node $age $phase $limit"
      fi
    done
    if [ -z "$worst" ] && ! compgen -G "$NR_HB/rank-*" > /dev/null && [ $((now - start)) -gt "$NR_STARTUP_TIMEOUT" ]; then
      worst="0 ? ${SLURM_JOB_NODELIST} $((now - start)) init $NR_STARTUP_TIMEOUT"
    fi
    [ -n "$worst" ] || continue
    echo "$worst $now" > "$NR_DIR/stall-a$NR_ATTEMPT"
    set -- $worst
    echo "nemotron watchdog: rank $2 on $3 stalled (last heartbeat: step $1, $5; none for $4 s > $6 s); ending the attempt" >&2
    scancel --signal=KILL "$(squeue -h -s -j "$NR_JOB" -o %i | grep -E '\.[0-9]+$' | sort -t. -k2 -n | tail -n 1)" 2>/dev/null \
      || kill -KILL "$pid"
    return
  done
}

nemotron_srun() {  # srun in the background, so that traps run while it does; then the attempt's end
  nemotron_srun_start "$@"
  nemotron_srun_end
}

nemotron_srun_start() {  # start srun in the background (NR_SRUN_PID) and the watchdog next to it
  local - err="$NR_DIR/srun-a$NR_ATTEMPT.err"
  set +xeu
  : > "$err"
  command srun "$@" 2>> "$err" &
  NR_SRUN_PID=$!
  # srun's stderr stays in $err (the failed node is read from it) and reaches the log as it comes
  tail -n +1 -f --pid="$NR_SRUN_PID" "$err" >&2 &
  NR_TAIL_PID=$!
  NR_WATCHDOG_PID=""
  if [ "$NR_STALL_TIMEOUT" -gt 0 ]; then nemotron_watchdog "$NR_SRUN_PID" & NR_WATCHDOG_PID=$!; fi
}

nemotron_srun_end() {  # [NODE REASON]: wait for that srun, then nemotron_attempt_end (with NODE, REASON)
  local - rc
  set +xeu
  while kill -0 "$NR_SRUN_PID" 2>/dev/null; do wait "$NR_SRUN_PID"; done
  wait "$NR_SRUN_PID"; rc=$?
  [ -n "$NR_WATCHDOG_PID" ] && { kill "$NR_WATCHDOG_PID" 2>/dev/null; wait "$NR_WATCHDOG_PID" 2>/dev/null; }
  wait "$NR_TAIL_PID" 2>/dev/null  # it ends once srun has and its stderr is shown
  nemotron_attempt_end "$rc" "$@"
}

nemotron_attempt_end() {  # $1: srun's exit code; $2 $3: the node and reason of a failure the caller saw.
  # Record why the attempt ended; requeue when allowed.
  local - rc=$1 kind reason node="" step="" requeue=false by_slurm=false restarts s why
  set +xeu
  restarts=$(_nr_restarts)
  [ -n "$restarts" ] && [ "$restarts" -gt "$NR_ATTEMPT" ] && by_slurm=true
  if [ -s "$NR_DIR/stall-a$NR_ATTEMPT" ]; then
    read -r step s node t phase limit _ < "$NR_DIR/stall-a$NR_ATTEMPT"
    kind=stall; reason="rank $s on $node stalled (last heartbeat: step $step, $phase; none for $t s > $limit s)"
  elif [ -s "$NR_DIR/stopped-a$NR_ATTEMPT" ]; then
    read -r step why < "$NR_DIR/stopped-a$NR_ATTEMPT"
    [ "$why" = TERM ] && $by_slurm && node=$(_nr_lost_nodes "$NR_ATTEMPT" "$SLURM_JOB_NODELIST")
    if [ "$why" = TERM ] && ! $by_slurm; then kind=cancelled; reason="stopped at step $step after SIGTERM (job cancelled); checkpoint saved"
    elif [ -n "$node" ]; then kind=node_fail; reason="ended by Slurm on $SLURM_JOB_NODELIST (down: $node): checkpoint at step $step"
    else _nr_signal_cause "$why" "$step"; fi
  elif $by_slurm; then  # Slurm requeued the job itself (node failure, preemption): srun may even say 0
    node=$(_nr_lost_nodes "$NR_ATTEMPT" "$SLURM_JOB_NODELIST")
    [ -n "$node" ] && kind=node_fail || kind=preempted
    reason="ended by Slurm on $SLURM_JOB_NODELIST${node:+ (down: $node)}; exit code $rc"
  elif [ -n "$3" ]; then  # the caller ended the step (a Ray job's raylet died under the driver)
    kind=failed; node=$2; reason="$3; exit code $rc"
  elif [ "$rc" -eq 0 ] && { [ ! -e "$NR_HB/rank-0" ] || [ "$(cut -d' ' -f2 "$NR_HB/rank-0")" = done ]; }; then
    kind=completed; reason="completed"  # (a script without heartbeats: its exit code is all there is)
  elif [ "$rc" -eq 0 ]; then  # srun said 0 but training did not finish: Slurm ended the step (node failure)
    node=$(_nr_lost_nodes "$NR_ATTEMPT" "$SLURM_JOB_NODELIST")
    [ -n "$node" ] && kind=node_fail || kind=preempted
    reason="ended by Slurm on $SLURM_JOB_NODELIST${node:+ (down: $node)} before training finished"
  else
    node=$(sed -n 's/^srun: error: \([^:]*\): task [0-9]*: .*/\1/p' "$NR_DIR/srun-a$NR_ATTEMPT.err" | head -n 1)
    kind=failed; reason="exit code $rc${node:+ (first failed task on $node)}"
    if [ "$rc" -eq 2 ] || [ "$rc" -eq 3 ]; then reason="$reason: a config or backend error, not restarted"; node=""; fi
  fi
  case "$kind" in
    completed|cancelled) ;;
    failed) { [ "$rc" -eq 2 ] || [ "$rc" -eq 3 ]; } || requeue=true ;;
    *) requeue=true ;;
  esac
  if $requeue && [ "$(_nr_used)" -ge "$NR_MAX_RESTARTS" ]; then
    requeue=false; reason="$reason; resilience.max_restarts ($NR_MAX_RESTARTS) reached"
  fi
  $requeue && [ -n "$node" ] && _nr_exclude "$node"
  _nr_record end kind "$(_nr_str "$kind")" reason "$(_nr_str "$reason")" exit_code "$rc" \
    step "$(_nr_str "$step")" node "$(_nr_str "$node")" requeue "$requeue" exclude "$(_nr_str "$(_nr_excluded)")"
  echo "nemotron: attempt $NR_ATTEMPT ended: $reason"
  if $requeue; then
    _nr_requeue "$by_slurm"
    return 0
  fi
  case "$kind" in
    completed) return 0 ;;
    cancelled) return "$((rc ? rc : 143))" ;;
  esac
  _nr_summary "$reason"
  return "$((rc ? rc : 1))"
}
