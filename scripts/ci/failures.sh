#!/usr/bin/env bash
# failures.sh LOG: what a failed `go test -v` run said about each failing
# test, at the end of CI's output, where a reader of its tail sees it: the
# test's own lines (errors and notes), without the commands it ran
# ("file_test.go:N: $ ...") or its timings. At most 40 lines a test.
set -euo pipefail
awk '
/^=== (RUN|CONT|PAUSE|NAME) / { cur = $3; next }
/^ *--- FAIL: / { failed[++n] = $3; next }
/^ +[A-Za-z0-9_]+_test\.go:[0-9]+: / {
	if ($0 ~ /_test\.go:[0-9]+: \$ / || $0 ~ /e2e timing/) next
	if (count[cur] < 40) { lines[cur] = lines[cur] $0 "\n"; count[cur]++ }
	else if (count[cur] == 40) { lines[cur] = lines[cur] "        [more left out]\n"; count[cur]++ }
}
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
