package generator

import (
	"strings"
	"testing"
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
		err := check(files, t.TempDir(), "demo")
		if err == nil || !strings.HasPrefix(err.Error(), OutDir+"/a.sh: ") {
			t.Fatalf("got %v, want the error of %s/a.sh", err, OutDir)
		}
	}
	delete(files, OutDir+"/a.sh")
	delete(files, OutDir+"/b.Dockerfile")
	delete(files, OutDir+"/y.sh")
	if err := check(files, t.TempDir(), "demo"); err == nil || !strings.Contains(err.Error(), "z.sh: missing the generated-file header") {
		t.Errorf("got %v, want the missing header of z.sh", err)
	}
}
