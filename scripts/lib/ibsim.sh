# Sourced by the bench scripts: starts ibsim on a net file, for one run.
#
# start_ibsim NAME NETFILE LOGDIR: starts `ibsim -s` with the options the
# net file's "# ibsim needs: ..." line asks for, under IBSIM_SOCKNAME=NAME,
# logging to LOGDIR/NAME.ibsim.log; waits until its control socket is
# listening; sets ibsim_pid. Exits the script when ibsim does not start.
start_ibsim() {
    local name=$1 net=$2 logdir=$3 opts
    opts=$(sed -n 's/^# ibsim needs: //p' "$net" | head -1)
    # shellcheck disable=SC2086
    IBSIM_SOCKNAME=$name ibsim -s $opts --no-console "$net" >"$logdir/$name.ibsim.log" 2>&1 &
    ibsim_pid=$!
    for _ in $(seq 600); do
        grep -q "@$name:ctl@" /proc/net/unix && return 0
        sleep 0.1
    done
    echo "ibsim did not start: $(cat "$logdir/$name.ibsim.log")" >&2
    exit 1
}
