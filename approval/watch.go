package approval

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"time"

	"github.com/agentbox-dev/agentbox/config"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// Notifier shows a desktop notification; nil shows none.
type Notifier func(ctx context.Context, title, body string)

// NotifySend is the desktop notification of notify-send (libnotify), or
// nil where the host has none. The body is the agent's text, escaped, and
// with the markup some notification servers read (<, >, &) written as
// entities.
func NotifySend() Notifier {
	path, err := exec.LookPath("notify-send")
	if err != nil {
		return nil
	}
	markup := strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;")
	return func(ctx context.Context, title, body string) {
		_ = exec.CommandContext(ctx, path, "--app-name=agentbox", "--", title, markup.Replace(body)).Run()
	}
}

// Watch shows each pending request as it arrives (polling every every),
// notifies, and asks at in: y approves it for the wished duration, a
// duration (10m) approves it for that long, n denies it (then a reason,
// which may be empty), an empty line leaves it pending. It returns when in
// ends or ctx is done.
func (h *Host) Watch(ctx context.Context, in io.Reader, out io.Writer, notify Notifier, every time.Duration) error {
	lines := readLines(in)
	seen := map[string]bool{}
	fmt.Fprintln(out, "watching for the agent's requests (Ctrl-C to stop)")
	for {
		reqs, _, err := h.List(ctx)
		if err != nil {
			return err
		}
		for _, r := range reqs {
			if r.State != Pending || seen[r.ID] {
				continue
			}
			seen[r.ID] = true
			if !h.decide(ctx, r, lines, out, notify) {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case _, ok := <-lines: // typed while nothing was asked: read and dropped
			if !ok {
				return nil
			}
		case <-time.After(every):
		}
	}
}

// decide shows r, asks, and answers it; false when in has ended.
func (h *Host) decide(ctx context.Context, r Request, lines <-chan string, out io.Writer, notify Notifier) bool {
	where := "the sandbox"
	if r.Task != "" {
		where = "task " + termsafe.String(r.Task)
	}
	body := fmt.Sprintf("%s asks for %s for %s: %s", where, termsafe.String(r.Dest), r.Duration, termsafe.String(r.Reason))
	if notify != nil {
		notify(ctx, "agentbox: a request for "+termsafe.String(r.Dest), body)
	}
	fmt.Fprintf(out, "\n%s %s\n  (times out at %s)\n", r.ID, body, r.Expires.Format(time.RFC3339))
	for {
		fmt.Fprint(out, "approve? y, n, a duration (10m), p (add to agentbox.yaml's allowlist), or Enter to leave it: ")
		line, ok := <-lines
		if !ok {
			return false
		}
		done, again, err := h.answerWith(ctx, r, strings.TrimSpace(line), lines, out)
		switch {
		case again:
			continue
		case err != nil:
			fmt.Fprintln(out, "error: "+termsafe.Message(err.Error()))
		case done.ID != "":
			fmt.Fprintln(out, done.Answered())
		}
		return true
	}
}

// answerWith acts on one answer at the terminal; again when it was no
// answer.
func (h *Host) answerWith(ctx context.Context, r Request, answer string, lines <-chan string, out io.Writer) (Request, bool, error) {
	switch answer {
	case "":
		fmt.Fprintln(out, "left pending: agentbox approve "+r.ID+" or agentbox deny "+r.ID)
		return Request{}, false, nil
	case "y", "yes":
		done, err := h.Approve(ctx, r.ID, "")
		return done, false, err
	case "p", "policy":
		done, res, err := h.ApproveIntoPolicy(ctx, r.ID)
		if err == nil {
			for _, f := range res.Files {
				fmt.Fprintf(out, "%-6s %s\n", f.Kind, termsafe.String(f.Path))
			}
		}
		return done, false, err
	case "n", "no":
		fmt.Fprint(out, "reason (for the agent and the audit log; Enter for none): ")
		why := <-lines
		done, err := h.Deny(ctx, r.ID, why)
		return done, false, err
	}
	if _, err := config.ParseTaskDuration(answer); err != nil {
		fmt.Fprintf(out, "%v\n", err)
		return Request{}, true, nil
	}
	done, err := h.Approve(ctx, r.ID, answer)
	return done, false, err
}

// readLines sends in's lines, then closes.
func readLines(in io.Reader) <-chan string {
	c := make(chan string)
	go func() {
		defer close(c)
		sc := bufio.NewScanner(in)
		for sc.Scan() {
			c <- sc.Text()
		}
	}()
	return c
}
