package approval

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"
)

// TestWatch: each pending request is shown once, escaped, with a
// notification; y approves it, a duration approves it for that long, n
// denies it with the reason typed next, Enter leaves it; the end of the
// input ends the watch.
func TestWatch(t *testing.T) {
	asked := now.Add(-time.Minute)
	listing := spooled("r0000000000aa", asked, "198.18.7.9/32:443", 600, "fixtures \x1b[2J", "") +
		spooled("r0000000000bb", asked, "docs.example.com:443", 900, "docs", "") +
		spooled("r0000000000cc", asked, "example.org:443", 60, "left", "") +
		spooled("r0000000000dd", asked, "example.net:443", 60, "denied", "")
	h, calls, _ := host(t, "", map[string]string{"": listing}, map[string]error{
		": grant 198.18.7.9/32 443 600": nil,
		fmt.Sprintf(": answer r0000000000aa approved %d ", now.Add(10*time.Minute).Unix()): nil,
		": grant-name docs.example.com 443 120":                                            nil,
		fmt.Sprintf(": answer r0000000000bb approved %d ", now.Add(2*time.Minute).Unix()):  nil,
		fmt.Sprintf(": answer r0000000000dd denied 0 %x", "not now"):                       nil,
	})
	h.Tasks = func() ([]string, error) { return nil, nil }
	var notes []string
	notify := func(_ context.Context, title, body string) { notes = append(notes, title+"|"+body) }
	var out strings.Builder
	in := strings.NewReader("y\nsoon\n2m\n\nn\nnot now\n")
	if err := h.Watch(t.Context(), in, &out, notify, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if len(*calls) != 5 {
		t.Errorf("egress calls %q", *calls)
	}
	for _, want := range []string{
		`the sandbox asks for 198.18.7.9/32:443 for 10m: fixtures \x1b[2J`,
		"approved r0000000000aa: 198.18.7.9/32:443 for the sandbox",
		`invalid duration "soon"`,
		"approved r0000000000bb: docs.example.com:443 for the sandbox, until 2026-11-27T16:02:00Z",
		"left pending: agentbox approve r0000000000cc",
		"denied r0000000000dd",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the watch lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "\x1b") || len(notes) != 4 || strings.Contains(notes[0], "\x1b") {
		t.Errorf("raw escapes or notifications %q:\n%s", notes, out.String())
	}
}

// TestWatchIntoPolicy: p adds the request's destination to agentbox.yaml's
// allowlist (ApproveIntoPolicy) and names the files written.
func TestWatchIntoPolicy(t *testing.T) {
	h, calls, _ := policyHost(t, map[string]string{"": spooled("r0000000000aa", now.Add(-time.Minute), "docs.example.com:8443", 600, "docs", "")})
	h.Tasks = func() ([]string, error) { return nil, nil }
	var out strings.Builder
	if err := h.Watch(t.Context(), strings.NewReader("p\n"), &out, nil, time.Millisecond); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"p (add to agentbox.yaml's allowlist)", "agentbox.yaml",
		"approved r0000000000aa: docs.example.com:8443 for the sandbox: added to agentbox.yaml's allowlist (profile balanced): no end"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the watch lacks %q:\n%s", want, out.String())
		}
	}
	if len(*calls) != 2 {
		t.Errorf("egress calls %q", *calls)
	}
}
