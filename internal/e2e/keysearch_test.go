//go:build e2e

package e2e

import (
	"encoding/base64"
	"regexp"
	"strconv"
	"strings"

	"github.com/agentbox-dev/agentbox/catalog"
)

// keySearchScript runs the agent CLI's command line ($2...), then searches
// the whole sandbox as the agent for the user's key (docs/gateway.md,
// "Keys outside the sandbox"): every file it can read (its container's
// whole tree, its volumes, mounts), every process's environ and cmdline
// under /proc (a task's agent shares egress's pid namespace: egress's
// processes are there), and the /run, /tmp and /etc/agentbox of every
// process it can enter through /proc/PID/root. The key comes base64'd in
// $1 and lives in a shell variable only: grep reads it through a pipe
// (process substitution, printf a builtin), so that the search's own
// command lines and environments do not hold it. It prints
// "KEYSEARCH found WHERE" for each hit, then a summary line; it exits with
// the CLI's status.
const keySearchScript = `b64=$1; shift
"$@"; rc=$?
start=$(date +%s%N)
k=$(printf %s "$b64" | base64 -d)
pat() { printf '%s\n' "$k"; }
grep -rlsF -f <(pat) --exclude-dir=proc --exclude-dir=sys --exclude-dir=dev / /dev/shm | sed 's/^/KEYSEARCH found file /'
pids=0 refused=0 read=0
for d in /proc/[0-9]*; do
	pids=$((pids + 1))
	for f in environ cmdline; do
		if data=$(tr '\0' '\n' 2>/dev/null <"$d/$f"); then
			read=$((read + 1))
			if printf '%s' "$data" | grep -qF -f <(pat); then echo "KEYSEARCH found $d/$f"; fi
		else
			refused=$((refused + 1))
		fi
	done
	for r in run tmp etc/agentbox etc/agentbox-keys; do
		grep -rlsF -f <(pat) "$d/root/$r" 2>/dev/null | sed 's/^/KEYSEARCH found /'
	done
done
placeholders=$(env | grep -c '=` + catalog.KeyPlaceholder + `$')
echo "KEYSEARCH done pids=$pids read=$read refused=$refused placeholders=$placeholders ms=$((($(date +%s%N) - start) / 1000000))"
exit $rc`

// withKeySearch is args (an agent CLI's command line) followed by the
// search of the sandbox for key.
func withKeySearch(args []string, key string) []string {
	return append([]string{"bash", "-c", keySearchScript, "keysearch", base64.StdEncoding.EncodeToString([]byte(key))}, args...)
}

var keySearchDone = regexp.MustCompile(`KEYSEARCH done pids=(\d+) read=(\d+) refused=(\d+) placeholders=(\d+) ms=(\d+)`)

// checkKeySearch: the search ran, found the key nowhere, and saw the
// placeholder in the agent's environment; in a task (which shares egress's
// pid namespace) egress's processes refused their environ. It returns how
// long the search took, in milliseconds.
func checkKeySearch(e *env, what string, r result, task bool) int {
	t := e.t
	out := r.stdout + r.stderr
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, "KEYSEARCH found") {
			t.Errorf("%s: the agent reads the user's key: %s", what, line)
		}
	}
	m := keySearchDone.FindStringSubmatch(out)
	if m == nil {
		t.Errorf("%s: the search of the sandbox did not finish: %s", what, tail(out, 40))
		return 0
	}
	n := func(i int) int { v, _ := strconv.Atoi(m[i]); return v }
	if n(4) == 0 {
		t.Errorf("%s: the agent's environment has no placeholder (%s)", what, m[0])
	}
	if task && n(3) == 0 {
		t.Errorf("%s: every process's environ was the agent's to read (%s): egress's processes are not there?", what, m[0])
	}
	t.Logf("%s: the key is nowhere the agent reads (%s)", what, m[0])
	return n(5)
}
