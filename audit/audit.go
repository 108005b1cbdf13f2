// Package audit is the audit log of the changes made to a running
// sandbox's egress: the grants of agentbox allow (refused ones too, with
// why), revokes, and policy add and remove applied live. One JSON line per
// record, appended in one write, in a file on the host that no container
// mounts; agentbox audit reads it, with the expiries the kernel enforced
// derived from it (WithExpiries).
package audit

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/user"
	"path/filepath"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/agentbox-dev/agentbox/internal/settings"
	"github.com/agentbox-dev/agentbox/internal/termsafe"
)

// Record is one line of the audit log (agentbox audit --json prints a
// list of them; the shape is in docs/profiles-and-elevation.md). A grant's
// expiry is Expires: the kernel ends it then, with no process of agentbox;
// agentbox audit derives an expire record from the log (WithExpiries),
// which holds no line for it.
type Record struct {
	Time    time.Time  `json:"time"`
	Event   string     `json:"event"` // grant, revoke, expire, policy-add, policy-remove or deny
	User    string     `json:"user"`  // the host user who ran agentbox
	Project string     `json:"project"`
	Sandbox string     `json:"sandbox"`
	Task    string     `json:"task,omitempty"` // empty: the sandbox of agentbox up
	Dest    string     `json:"destination"`    // an address, a CIDR or a name
	Ports   []uint16   `json:"ports"`
	Seconds int64      `json:"duration_seconds,omitempty"` // grants only
	Expires *time.Time `json:"expires,omitempty"`          // grants only
	Reason  string     `json:"reason,omitempty"`
	// An agent's request (agentbox approve, deny): its ID, when it was
	// asked, and a denial's reason (the host user's).
	Request  string     `json:"request,omitempty"`
	Asked    *time.Time `json:"asked,omitempty"`
	Note     string     `json:"note,omitempty"`
	Result   string     `json:"result"` // "ok", or the error
	Duration string     `json:"-"`      // Seconds as 1h30m, for the table
}

// Events, and the result of a change that was made.
const (
	Grant        = "grant"
	Revoke       = "revoke"
	Expire       = "expire" // derived by WithExpiries, never written
	PolicyAdd    = "policy-add"
	PolicyRemove = "policy-remove"
	Deny         = "deny" // an agent's request denied (agentbox deny)
	OK           = "ok"
)

// MaxReason caps a grant's reason, in bytes.
const MaxReason = 500

// StateDir is the directory of the audit logs:
// $XDG_STATE_HOME/agentbox/audit.
func StateDir() (string, error) { return settings.StateDir("audit") }

// HostUser names the user running agentbox.
func HostUser() string {
	if u, err := user.Current(); err == nil {
		return u.Username
	}
	return "uid " + strconv.Itoa(os.Getuid())
}

// Path is the audit log in dir of the sandbox name of the project in
// project. It refuses a log inside the project, which the sandbox mounts.
func Path(dir, project, name string) (string, error) {
	path := filepath.Join(dir, name+".jsonl")
	if inside(project, dir) {
		return "", fmt.Errorf("the audit log %s would be inside the project %s, which the sandbox mounts: set XDG_STATE_HOME to a directory outside it", path, project)
	}
	return path, nil
}

// ProjectDir is the project directory dir as the audit log names it:
// absolute, or as given when it cannot be made so.
func ProjectDir(dir string) string {
	if a, err := filepath.Abs(dir); err == nil {
		return a
	}
	return dir
}

// inside says whether dir is project or below it, links resolved as far as
// they exist.
func inside(project, dir string) bool {
	resolve := func(p string) string {
		p, _ = filepath.Abs(p)
		for q, rest := p, ""; q != filepath.Dir(q); q, rest = filepath.Dir(q), filepath.Join(filepath.Base(q), rest) {
			if r, err := filepath.EvalSymlinks(q); err == nil {
				return filepath.Join(r, rest)
			}
		}
		return p
	}
	rel, err := filepath.Rel(resolve(project), resolve(dir))
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}

// open opens the audit log at path for appending, creating it (0600) and
// its directory (0700).
func open(path string) (*os.File, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("creating the audit log's directory: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return nil, fmt.Errorf("opening the audit log: %w", err)
	}
	return f, nil
}

// write appends r to f as one line, in one write: with O_APPEND, records
// of concurrent agentbox processes do not interleave.
func write(f *os.File, r Record) error {
	line, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("encoding an audit record: %w", err)
	}
	// termsafe.JSON: a reason's C1 and bidi runes escaped, as \u009b, so that
	// the log too is safe to print.
	if _, err := f.Write(append(termsafe.JSON(line), '\n')); err != nil {
		return fmt.Errorf("writing the audit log: %w", err)
	}
	return nil
}

// Append appends r to the audit log at path.
func Append(path string, r Record) error {
	f, err := open(path)
	if err != nil {
		return err
	}
	err = write(f, r)
	if cerr := f.Close(); err == nil && cerr != nil {
		err = fmt.Errorf("writing the audit log: %w", cerr)
	}
	return err
}

// Logged opens the audit log at path, runs do, and appends rec with do's
// result: a log that cannot be opened stops the change before it is made.
func Logged(path string, rec *Record, do func() error) error {
	f, err := open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	doErr := do()
	rec.Result = OK
	if doErr != nil {
		rec.Result = doErr.Error()
	}
	if err := write(f, *rec); err != nil {
		return errors.Join(doErr, err)
	}
	return doErr
}

// Read reads the audit log at path, the records at or after since. A
// missing log has no records.
func Read(path string, since time.Time) ([]Record, error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	} else if err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	defer f.Close()
	var out []Record
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		var r Record
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			return nil, fmt.Errorf("%s:%d: not an audit record: %w", path, n, err)
		}
		if !r.Time.Before(since) {
			out = append(out, r)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading the audit log: %w", err)
	}
	return out, nil
}

// ClipReason is a grant's reason as the audit log keeps it: spaces
// trimmed, cut to at most MaxReason bytes where no UTF-8 sequence is split.
// It stays as given otherwise: the log holds it JSON-escaped, and audit and
// allow --list print it through termsafe.
func ClipReason(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= MaxReason {
		return s
	}
	cut := MaxReason
	for cut > 0 && cut > MaxReason-utf8.UTFMax && !utf8.RuneStart(s[cut]) {
		cut--
	}
	if !utf8.RuneStart(s[cut]) { // no sequence starts near the cut: bytes of invalid UTF-8
		cut = MaxReason
	}
	return strings.TrimSpace(s[:cut])
}
