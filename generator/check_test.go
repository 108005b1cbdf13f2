package generator

import (
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/checkmemo"
)

// The files are checked side by side, but the error is the one a run in
// path order meets first, whatever finishes first.
func TestCheckReportsFirstFileInOrder(t *testing.T) {
	files := map[string][]byte{
		OutDir + "/a.sh":         []byte("# " + Header + "\nif then fi\n"),
		OutDir + "/b.Dockerfile": []byte("# " + Header + "\nNOT A DOCKERFILE\n"),
		OutDir + "/c.sh":         []byte("# " + Header + "\necho ok\n"),
		OutDir + "/z.sh":         []byte("echo no header\n"),
		OutDir + "/y.sh":         []byte("# " + Header + "\n( \n"),
	}
	for range 20 {
		err := check(files, t.TempDir(), "demo", nil)
		if err == nil || !strings.HasPrefix(err.Error(), OutDir+"/a.sh: ") {
			t.Fatalf("got %v, want the error of %s/a.sh", err, OutDir)
		}
	}
	delete(files, OutDir+"/a.sh")
	delete(files, OutDir+"/b.Dockerfile")
	delete(files, OutDir+"/y.sh")
	if err := check(files, t.TempDir(), "demo", nil); err == nil || !strings.Contains(err.Error(), "z.sh: missing the generated-file header") {
		t.Errorf("got %v, want the missing header of z.sh", err)
	}
}

// mapMemo is a CheckMemo in memory; the check stage calls it from a
// goroutine per file.
type mapMemo struct {
	mu   sync.Mutex
	keys map[string]bool
}

func newMapMemo() *mapMemo { return &mapMemo{keys: map[string]bool{}} }

func (m *mapMemo) Passed(key string) bool { m.mu.Lock(); defer m.mu.Unlock(); return m.keys[key] }
func (m *mapMemo) Pass(key string)        { m.mu.Lock(); defer m.mu.Unlock(); m.keys[key] = true }

// A memo learns the files that pass, and only those, each under the key of
// its bytes, path, directory and project; a file it knows is not checked
// again (broken bytes under a known key pass, which shows the check was
// skipped).
func TestCheckMemo(t *testing.T) {
	dir := t.TempDir()
	abs := filepath.Join(dir, OutDir)
	good := []byte("# " + Header + "\necho ok\n")
	bad := []byte("# " + Header + "\nif then fi\n")
	a, b := OutDir+"/a.sh", OutDir+"/b.sh"
	memo := newMapMemo()
	if err := check(map[string][]byte{a: good, b: bad}, dir, "demo", memo); err == nil {
		t.Fatal("a broken file passed")
	}
	if want := checkmemo.Key(good, a, abs, "demo"); len(memo.keys) != 1 || !memo.keys[want] {
		t.Fatalf("the memo learnt %v, want only the key of a.sh", memo.keys)
	}
	for _, other := range []string{checkmemo.Key(good, b, abs, "demo"), checkmemo.Key(good, a, abs+"2", "demo"),
		checkmemo.Key(good, a, abs, "demo2"), checkmemo.Key(bad, a, abs, "demo")} {
		if memo.keys[other] {
			t.Errorf("another check has the key of a.sh's")
		}
	}
	memo.Pass(checkmemo.Key(bad, b, abs, "demo"))
	if err := check(map[string][]byte{a: good, b: bad}, dir, "demo", memo); err != nil {
		t.Errorf("a file the memo knows was checked again: %v", err)
	}
	if err := check(map[string][]byte{a: good, b: bad}, dir, "demo", nil); err == nil {
		t.Error("without the memo the broken file passed")
	}
}
