package gitgate

import (
	"slices"
	"testing"
)

// TestShownBranches: a branch written with no commit of its own shows as
// empty; the result itself keeps the gate's statuses.
func TestShownBranches(t *testing.T) {
	res := &Result{Branches: []Branch{
		{Name: "a", Status: StatusNew, Commits: 2},
		{Name: "b", Status: StatusNew},
		{Name: "c", Status: StatusUpdated},
		{Name: "d", Status: StatusUnchanged},
		{Name: "e", Status: StatusRefused},
	}}
	var got []Status
	for _, b := range res.ShownBranches() {
		got = append(got, b.Status)
	}
	if want := []Status{StatusNew, StatusEmpty, StatusEmpty, StatusUnchanged, StatusRefused}; !slices.Equal(got, want) {
		t.Errorf("shown %q, want %q", got, want)
	}
	if res.Branches[1].Status != StatusNew {
		t.Errorf("the result changed: %q", res.Branches[1].Status)
	}
}

func TestReasonString(t *testing.T) {
	for _, tt := range []struct {
		r    Reason
		want string
	}{
		{Reason{Why: "not a valid branch name"}, "not a valid branch name"},
		{Reason{Path: ".vscode/tasks.json", Why: "a protected path"}, ".vscode/tasks.json: a protected path"},
		{Reason{Commit: "0123456789abcdef0123", Path: "lib", Why: "a gitlink"}, "0123456789ab lib: a gitlink"},
		{Reason{Commit: "abc", Why: "fsck"}, "abc fsck"},
	} {
		if got := tt.r.String(); got != tt.want {
			t.Errorf("%+v: %q, want %q", tt.r, got, tt.want)
		}
	}
}

func TestLimitsString(t *testing.T) {
	want := "100000 new objects, 100 MiB for one object once inflated, 1 GiB for all of them, " +
		"a path of 128 components or 4096 bytes, 100000 entries in a tree, a checkout of one of " +
		"its trees of 1000000 files or 10 GiB"
	if got := DefaultLimits.String(); got != want {
		t.Errorf("got  %q\nwant %q", got, want)
	}
	l := Limits{ObjectSize: 3 << 30, TotalSize: 3<<30 + 1<<20, CheckoutSize: 512 << 20}
	if got := l.String(); got != "0 new objects, 3 GiB for one object once inflated, 3073 MiB for all of them, "+
		"a path of 0 components or 0 bytes, 0 entries in a tree, a checkout of one of its trees of 0 files or 512 MiB" {
		t.Errorf("got %q", got)
	}
}
