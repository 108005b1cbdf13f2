package sandbox

// The running sandbox against the generated files: agentbox up records the
// files it started the sandbox from (a hash, beside the egress container's
// id), and generate, shell, verify and blocked say when the files have
// changed since: the policy is baked into the egress image, so a changed
// file does nothing until agentbox up rebuilds and recreates.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/atomicfile"
	"github.com/agentbox-dev/agentbox/internal/settings"
)

// UpRecord is what agentbox up started a sandbox from.
type UpRecord struct {
	Dir    string `json:"dir"`    // the project directory
	Egress string `json:"egress"` // the egress container's id
	Files  string `json:"files"`  // FilesHash of the project then
}

// UpRecordPath is where up records the sandbox of project.
func UpRecordPath(project string) (string, error) {
	d, err := settings.StateDir("sandboxes")
	if err != nil {
		return "", err
	}
	return filepath.Join(d, project+".json"), nil
}

// FilesHash hashes the generated files a sandbox is built and started from:
// every regular file under .agentbox/ but its kubernetes/ directory, by path
// and content.
func FilesHash(dir string) (string, error) {
	root := filepath.Join(dir, generator.OutDir)
	h := sha256.New()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if d.IsDir() && rel == "kubernetes" {
			return filepath.SkipDir
		}
		if !d.Type().IsRegular() {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		fmt.Fprintf(h, "%s\x00%d\x00", filepath.ToSlash(rel), len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", err
	}
	return hex.EncodeToString(h.Sum(nil)), nil
}

// egressID is the id of project's egress container, "" when there is none.
func egressID(ctx context.Context, docker, project string) (string, error) {
	s, err := Docker{Path: docker}.ServiceState(ctx, project, "egress")
	if err != nil || s == nil {
		return "", err
	}
	return s.ID, nil
}

// RecordUp records, after agentbox up, the files the sandbox of project
// in dir was started from.
func RecordUp(ctx context.Context, docker, dir, project string) error {
	id, err := egressID(ctx, docker, project)
	if err != nil || id == "" {
		return err
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return err
	}
	sum, err := FilesHash(dir)
	if err != nil {
		return err
	}
	path, err := UpRecordPath(project)
	if err != nil {
		return err
	}
	data, _ := json.Marshal(UpRecord{Dir: abs, Egress: id, Files: sum})
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return os.WriteFile(path, data, 0o600)
}

// Stale reports whether the running sandbox of project in dir was
// started by agentbox up from files that have changed since. It knows only
// what up recorded: a sandbox started otherwise (the Dev Container, compose
// itself) or recreated since is not judged.
func Stale(ctx context.Context, docker, dir, project string) bool {
	if project == "" || strings.ContainsAny(project, "/\\") {
		return false
	}
	path, err := UpRecordPath(project)
	if err != nil {
		return false
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return false
	}
	var rec UpRecord
	abs, _ := filepath.Abs(dir)
	if json.Unmarshal(data, &rec) != nil || rec.Dir != abs {
		return false
	}
	sum, err := FilesHash(dir)
	if err != nil || sum == rec.Files {
		return false
	}
	if docker == "" {
		if docker, err = exec.LookPath("docker"); err != nil {
			return false
		}
	}
	id, err := egressID(ctx, docker, project)
	return err == nil && id == rec.Egress
}

// StaleNote is what generate, shell, verify and blocked print when the
// running sandbox predates the generated files.
const StaleNote = "agentbox: the running sandbox was started before the generated files last changed; " +
	"agentbox up applies them (it rebuilds and recreates the containers)\n"

// WarnStale prints StaleNote to w when the running sandbox of project in
// dir predates the generated files. docker "" looks it up when there is a
// record to check; nothing is said when it cannot tell.
func WarnStale(ctx context.Context, docker, dir, project string, w io.Writer) {
	if Stale(ctx, docker, dir, project) {
		fmt.Fprint(w, StaleNote)
	}
}

// ReadUpRecord reads up's record of project in dir: nil when there is none
// (or it is of another directory).
func ReadUpRecord(dir, project string) (*UpRecord, string) {
	if project == "" || strings.ContainsAny(project, "/\\") {
		return nil, ""
	}
	path, err := UpRecordPath(project)
	if err != nil {
		return nil, ""
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, ""
	}
	var rec UpRecord
	abs, _ := filepath.Abs(dir)
	if json.Unmarshal(data, &rec) != nil || rec.Dir != abs {
		return nil, ""
	}
	return &rec, path
}

// RecordLive records, after agentbox policy applied a change to the
// running sandbox, that the sandbox has the files now written when it had
// those before them (before, their FilesHash): the stale warning then says
// nothing of this change.
func RecordLive(dir, project, before string) error {
	rec, path := ReadUpRecord(dir, project)
	if rec == nil || before == "" || rec.Files != before {
		return nil
	}
	sum, err := FilesHash(dir)
	if err != nil {
		return err
	}
	rec.Files = sum
	data, _ := json.Marshal(rec)
	_, err = atomicfile.WriteFile(path, data, 0o600)
	return err
}
