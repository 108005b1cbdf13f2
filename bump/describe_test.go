package bump

import "testing"

// TestDescribe: what a bump's table shows of its changes.
func TestDescribe(t *testing.T) {
	full := "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	for in, want := range map[string]string{full: "sha256:0123456789ab", "sha256:0123": "sha256:0123", "": "", "1.2.3": "1.2.3"} {
		if got := ShortDigest(in); got != want {
			t.Errorf("ShortDigest(%q) = %q, want %q", in, got, want)
		}
	}
	if got := (PackageChange{TreeSize: 40}).TreeNote(); got != "tree of 40 packages unchanged" {
		t.Errorf("unchanged tree: %q", got)
	}
	if got := (PackageChange{TreeSize: 40, TreeChanged: 3}).TreeNote(); got != "3 of 40 packages of its tree changed" {
		t.Errorf("changed tree: %q", got)
	}
	if old, cur := (DebianChange{Package: ClosureRow, Old: "", New: full}).Short(); old != "" || cur != "sha256:0123456789ab" {
		t.Errorf("closure: %q, %q", old, cur)
	}
	if old, cur := (DebianChange{Package: "git", Old: "1:2.39.5-0+deb12u1", New: "1:2.39.5-0+deb12u2"}).Short(); old != "1:2.39.5-0+deb12u1" || cur != "1:2.39.5-0+deb12u2" {
		t.Errorf("package: %q, %q", old, cur)
	}
}
