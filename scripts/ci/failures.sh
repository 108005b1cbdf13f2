#!/usr/bin/env bash
# failures.sh LOG: what a failed `go test -v` run said about each failing
# test, at the end of CI's output, where a reader of its tail sees it: the
# test's own lines (errors and notes), without the commands it ran
# ("file_test.go:N: $ ...") or its timings. A line's continuation (the
# further lines of a message, indented deeper) comes with it. At most 120
# lines a test.
set -euo pipefail
awk '
function keep(line) {
	if (count[cur] < 120) { lines[cur] = lines[cur] line "\n"; count[cur]++ }
	else if (count[cur] == 120) { lines[cur] = lines[cur] "        [more left out]\n"; count[cur]++ }
}
/^=== (RUN|CONT|PAUSE|NAME) / { cur = $3; kept = 0; next }
/^ *--- (FAIL|PASS|SKIP): / { kept = 0; if ($2 == "FAIL:") failed[++n] = $3; next }
/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
	kept = 0
	if ($0 ~ /_test\.go:[0-9]+: \$ / || $0 ~ /e2e timing/) next
	match($0, /^ +/); indent = RLENGTH; kept = 1
	keep($0)
	next
}
kept && match($0, /^ +/) && RLENGTH > indent { keep($0); next }
{ kept = 0 }
END {
	if (n == 0) exit
	print "=== what the failing tests said (" n " failing) ==="
	for (i = 1; i <= n; i++) {
		t = failed[i]
		if (!(t in lines)) continue
		print "--- " t ":"
		printf "%s", lines[t]
	}
}' "$1"
