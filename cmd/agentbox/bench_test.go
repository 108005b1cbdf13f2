package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// BenchmarkGenerate measures `agentbox generate` on the largest example,
// in-process: load, validate, plan, render, check every output with its
// parser, and write. "fresh" writes every file into an empty copy; "current"
// is the common case of files already up to date (as in CI's --check).
// Besides ns/op (the mean) it reports the median, as docs/performance.md quotes.
func BenchmarkGenerate(b *testing.B) {
	src := largestExample(b)
	for _, bc := range []struct {
		name string
		args []string
	}{
		{"fresh", []string{"generate"}},
		{"current", []string{"generate"}},
		{"check", []string{"generate", "--check"}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			dir := b.TempDir()
			for _, f := range []string{"agentbox.yaml", "agentbox.lock"} {
				data, err := os.ReadFile(filepath.Join(src, f))
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(dir, f), data, 0o644); err != nil {
					b.Fatal(err)
				}
			}
			args := append(bc.args, "-C", dir)
			if bc.name != "fresh" && runArgs(b, []string{"generate", "-C", dir}, io.Discard, io.Discard) != exitOK {
				b.Fatal("generate failed")
			}
			times := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				if bc.name == "fresh" {
					b.StopTimer()
					os.RemoveAll(filepath.Join(dir, ".agentbox"))
					os.RemoveAll(filepath.Join(dir, ".devcontainer"))
					b.StartTimer()
				}
				start := time.Now()
				if code := runArgs(b, args, io.Discard, io.Discard); code != exitOK {
					b.Fatalf("exit %d", code)
				}
				times = append(times, time.Since(start))
			}
			slices.Sort(times)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
		})
	}
}

// largestExample returns the example with the largest agentbox.yaml.
func largestExample(b *testing.B) string {
	paths, _ := filepath.Glob("../../examples/*/agentbox.yaml")
	best, size := "", int64(-1)
	for _, p := range paths {
		if fi, err := os.Stat(p); err == nil && fi.Size() > size {
			best, size = filepath.Dir(p), fi.Size()
		}
	}
	if best == "" {
		b.Fatal("no examples")
	}
	return best
}

// BenchmarkDiff measures `agentbox diff` on the largest example against its
// previous commit, in-process: two git processes per file read at the base,
// and both sandboxes compiled. The second commit adds a domain and moves the
// agent CLI's version.
func BenchmarkDiff(b *testing.B) {
	dir := diffRepo(b, largestExample(b))
	times := make([]time.Duration, 0, b.N)
	for b.Loop() {
		start := time.Now()
		if code := runArgs(b, []string{"diff", "HEAD~1", "-C", dir}, io.Discard, io.Discard); code != exitOK {
			b.Fatalf("exit %d", code)
		}
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
}

// diffRepo makes a git repository with two commits of the example in src.
func diffRepo(b *testing.B, src string) string {
	gitHome(b)
	dir := b.TempDir()
	git(b, dir, "init", "-q")
	for _, f := range []string{"agentbox.yaml", "agentbox.lock"} {
		data, err := os.ReadFile(filepath.Join(src, f))
		if err != nil {
			b.Fatal(err)
		}
		writeFile(b, filepath.Join(dir, f), data)
	}
	git(b, dir, "add", "-A")
	git(b, dir, "commit", "-qm", "one")
	yaml, _ := os.ReadFile(filepath.Join(dir, "agentbox.yaml"))
	writeFile(b, filepath.Join(dir, "agentbox.yaml"), []byte(strings.Replace(string(yaml), "    - docs.acme.test\n", "    - docs.acme.test\n    - status.acme.test\n", 1)))
	lock, _ := os.ReadFile(filepath.Join(dir, "agentbox.lock"))
	writeFile(b, filepath.Join(dir, "agentbox.lock"), []byte(strings.ReplaceAll(string(lock), "2.0.14", "2.0.15")))
	git(b, dir, "commit", "-qam", "two")
	return dir
}
