package shquote

import (
	"os/exec"
	"testing"

	_ "github.com/agentbox-dev/agentbox/internal/testing/golden"
)

// TestWordRoundTrip has the shell itself read each quoted word back.
func TestWordRoundTrip(t *testing.T) {
	sh, err := exec.LookPath("sh")
	if err != nil {
		t.Skip("no sh")
	}
	for _, s := range []string{"", "plain", "a b", "it's", `$(id)`, "`id`", "a\nb", "*", "~x", `\`, "a'b'c", "-rf", "@scope/pkg@1.0"} {
		out, err := exec.Command(sh, "-c", "printf %s "+Word(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("Word(%q) = %s: the shell read %q (%v)", s, Word(s), out, err)
		}
	}
	if got := Words([]string{"git", "jq=1.6", "a b"}); got != "git jq=1.6 'a b'" {
		t.Errorf("Words = %q", got)
	}
}
