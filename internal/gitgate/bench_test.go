package gitgate

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// importFiles writes a stream of commits on branch from main: commits
// commits, each adding files files of about 100 bytes.
func importFiles(branch, from string, commits, files int) string {
	var s strings.Builder
	n := 0
	for c := range commits {
		fmt.Fprintf(&s, "commit refs/heads/%s\ncommitter A <a@example.invalid> %d +0000\ndata 8\ncommit %d\n", branch, 1700000000+c, c%10)
		if c == 0 {
			fmt.Fprintf(&s, "from %s\n", from)
		}
		for range files {
			content := fmt.Sprintf("file %d: %s\n", n, strings.Repeat("x", 80))
			fmt.Fprintf(&s, "M 100644 inline src/d%02d/e%02d/f%05d.txt\ndata %d\n%s\n", n%50, n/50%20, n, len(content), content)
			n++
		}
	}
	return s.String()
}

// BenchmarkFetch measures Fetch of one branch into a host of a few files
// or of 10,000: a branch of 10,000 new files in one commit, of 10,000
// commits of a file each, or of one commit of one file.
func BenchmarkFetch(b *testing.B) {
	for _, c := range []struct {
		name                    string
		hostFiles               int
		commits, filesPerCommit int
	}{
		{"10k-files", 0, 1, 10000},
		{"10k-commits", 0, 10000, 1},
		{"host-10k-files/1-file", 10000, 1, 1},
	} {
		b.Run(c.name, func(b *testing.B) {
			isolate(b)
			host := newHost(b)
			if c.hostFiles > 0 {
				fastImport(b, host, importFiles("main", "refs/heads/main^0", 1, c.hostFiles))
				gitT(b, host, "reset", "-q", "--hard")
			}
			agent := newAgent(b, host)
			main := gitT(b, agent, "rev-parse", "main")
			stream := importFiles("work", main, c.commits, c.filesPerCommit)
			if c.hostFiles > 0 {
				stream = strings.ReplaceAll(stream, "src/", "new/")
			}
			fastImport(b, agent, stream)
			bundle := bundleOf(b, agent)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				dir := filepath.Join(b.TempDir(), "host")
				if out, err := exec.Command("cp", "-a", host, dir).CombinedOutput(); err != nil {
					b.Fatalf("cp: %v %s", err, out)
				}
				b.StartTimer()
				res, err := Fetch(b.Context(), FetchOptions{Dir: dir, Bundle: bundle})
				if err != nil {
					b.Fatal(err)
				}
				if res.Refused() != 0 {
					b.Fatalf("%+v", res.Branches)
				}
			}
		})
	}
}
