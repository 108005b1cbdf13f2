package main

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkGenerate measures `agentbox generate` on the largest example,
// in-process: load, validate, plan, render, check every output with its
// parser, and write. "fresh" writes every file into an empty copy; "current"
// is the common case of files already up to date (as in CI's --check).
// Besides ns/op (the mean) it reports the median, as the README quotes.
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
			if bc.name != "fresh" && run([]string{"generate", "-C", dir}, io.Discard, io.Discard) != exitOK {
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
				if code := run(args, io.Discard, io.Discard); code != exitOK {
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
