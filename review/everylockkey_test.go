package review

import (
	"slices"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/lockfile"
)

// TestLockKeysDescribed: every key agentbox.lock can hold (its wire
// format, walked by lockfile.Keys) is in LockKeys, with a part or a
// reason, and LockKeys names no key the lock cannot hold.
func TestLockKeysDescribed(t *testing.T) {
	keys := lockfile.Keys()
	for _, k := range keys {
		role, ok := LockKeys[k]
		if !ok {
			t.Errorf("agentbox.lock's key %s is not in review.LockKeys", k)
		} else if (role.Part == "") == (role.Reason == "") {
			t.Errorf("review.LockKeys[%q] must have a part or a reason, not both or neither", k)
		}
	}
	for k := range LockKeys {
		if !slices.Contains(keys, k) {
			t.Errorf("review.LockKeys names %s, which agentbox.lock cannot hold", k)
		}
	}
}

// lockEdits is one edit per key of agentbox.lock, made to the lock of
// testdata/every-key: each occurrence of the old text becomes the new. A
// key with no edit of its own says why in lockNoEdit.
var lockEdits = map[string][2]string{
	"images":                       {`"sha256:1111`, `"sha256:5555`},
	"debian.snapshot":              {`snapshot: "20261101T000000Z"`, `snapshot: "20261001T000000Z"`},
	"debian.security_snapshot":     {`"20261101T060000Z"`, `"20261102T060000Z"`},
	"debian.packages.*.*.closure":  {`sha256:3333`, `sha256:5555`},
	"debian.packages.*.*.packages": {`"git": "1:2.39.5-0+deb12u2"`, `"git": "1:2.39.6-0+deb12u1"`},
	"npm.*.version":                {`"2.0.14"`, `"2.0.15"`}, // the CLI's own entry moves with it
	"npm.*.packages.*.name": {`"cli.js"}}`, `"cli.js"}, dependencies: {"x": "^1.0.0"}}
      "node_modules/x": {name: "y", version: "1.0.0", integrity: "sha512-CCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCCA=="}`},
	"npm.*.packages.*.version":               {`"2.0.14"`, `"2.0.13"`},
	"npm.*.packages.*.integrity":             {`sha512-AAAA`, `sha512-BAAA`},
	"npm.*.packages.*.bin":                   {`"cli.js"`, `"other.js"`},
	"npm.*.packages.*.optional":              {`"cli.js"}}`, `"cli.js"}, optional: true}`},
	"npm.*.packages.*.install_script":        {`"cli.js"}}`, `"cli.js"}, install_script: true}`},
	"npm.*.packages.*.dependencies":          {`"cli.js"}}`, `"cli.js"}, dependencies: {"left-pad": "^1.0.0"}}`},
	"npm.*.packages.*.optional_dependencies": {`"cli.js"}}`, `"cli.js"}, optional_dependencies: {"fsevents": "^2.0.0"}}`},
	"npm.*.packages.*.peer_dependencies":     {`"cli.js"}}`, `"cli.js"}, peer_dependencies: {"react": "^18.0.0"}}`},
	"npm.*.packages.*.optional_peers":        {`"cli.js"}}`, `"cli.js"}, peer_dependencies: {"react": "^18.0.0"}, optional_peers: ["react"]}`},
	"npm.*.packages.*.os":                    {`"cli.js"}}`, `"cli.js"}, os: ["linux"]}`},
	"npm.*.packages.*.cpu":                   {`"cli.js"}}`, `"cli.js"}, cpu: ["x64"]}`},
	"npm.*.packages.*.libc":                  {`"cli.js"}}`, `"cli.js"}, libc: ["glibc"]}`},
}

// lockNoEdit: the keys no single edit can change and still be a valid lock.
var lockNoEdit = map[string]string{
	"version":         "1 is the only other format, which pins no Debian packages and no npm tree",
	"debian.releases": "the packages are pinned per release: a release moves with its packages, whose rows show it",
}

// TestEveryLockKeyClassified makes one edit per key of agentbox.lock and
// diffs the project with it: a key that is part of the Sandbox gives a row
// (the reviewer sees the pin move), a key declared as granting nothing
// gives none.
func TestEveryLockKeyClassified(t *testing.T) {
	src, lock, base := everyKey(t)
	for _, key := range lockfile.Keys() {
		t.Run(key, func(t *testing.T) {
			edit, ok := lockEdits[key]
			if !ok {
				if _, why := lockNoEdit[key]; !why {
					t.Fatalf("no edit for agentbox.lock's key %s in lockEdits", key)
				}
				return
			}
			if !strings.Contains(string(lock), edit[0]) {
				t.Fatalf("the lock has no %q", edit[0])
			}
			head, err := explainSource(string(src), strings.ReplaceAll(string(lock), edit[0], edit[1]))
			if err != nil {
				t.Fatalf("%s: %v", key, err)
			}
			rows := DiffSandboxes(base, head)
			if LockKeys[key].Reason != "" {
				if len(rows) > 0 {
					t.Errorf("%s is declared as changing nothing (%s), but:\n%s", key, LockKeys[key].Reason, rowLines(rows))
				}
				return
			}
			if len(rows) == 0 {
				t.Errorf("%s: %q -> %q gives no row", key, edit[0], edit[1])
			}
			t.Logf("%s:\n%s", key, rowLines(rows))
		})
	}
}
