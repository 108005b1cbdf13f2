package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"
)

// BenchmarkProcess measures whole agentbox processes on the largest
// example, as a user or CI runs them: the built binary, start-up included.
// "version" is the floor (process start); "diff" compares the example with
// its previous commit (a domain added, the agent CLI's version moved; the
// repository of BenchmarkDiff); "generate-check" is CI's drift check with
// every file current, the check memo knowing them (a second run of the
// binary), "generate-check-cold" the same with an empty memo (its first). Besides ns/op (the mean) it reports the median of
// the wall-clock times, which docs/performance.md quotes (targets: diff
// < 100 ms, generate --check < 30 ms), and of the CPU times (user and
// system, the git processes diff starts not counted): on a busy machine
// the wall clock measures the other work too.
func BenchmarkProcess(b *testing.B) {
	bin := filepath.Join(b.TempDir(), "agentbox")
	if out, err := exec.Command("go", "build", "-o", bin, ".").CombinedOutput(); err != nil {
		b.Fatalf("go build: %v\n%s", err, out)
	}
	dir := diffRepo(b, largestExample(b))
	// The check memo: in a cache of the benchmark's own, which this first
	// run of generate fills; "cold" gives every run an empty one.
	cache := b.TempDir()
	gen := exec.Command(bin, "generate", "-C", dir)
	gen.Env = append(os.Environ(), "XDG_CACHE_HOME="+cache)
	if out, err := gen.CombinedOutput(); err != nil {
		b.Fatalf("generate: %v\n%s", err, out)
	}
	for _, bc := range []struct {
		name string
		args []string
		cold bool
	}{
		{"version", []string{"version"}, false},
		{"diff", []string{"diff", "HEAD~1", "-C", dir}, false},
		{"generate-check", []string{"generate", "--check", "-C", dir}, false},
		{"generate-check-cold", []string{"generate", "--check", "-C", dir}, true},
	} {
		b.Run(bc.name, func(b *testing.B) {
			times, cpu := make([]time.Duration, 0, b.N), make([]time.Duration, 0, b.N)
			for b.Loop() {
				cmd := exec.Command(bin, bc.args...)
				c := cache
				if bc.cold {
					c = b.TempDir()
				}
				cmd.Env = append(os.Environ(), "NO_COLOR=1", "XDG_CACHE_HOME="+c)
				start := time.Now()
				if out, err := cmd.CombinedOutput(); err != nil {
					b.Fatalf("%v: %v\n%s", bc.args, err, out)
				}
				times = append(times, time.Since(start))
				cpu = append(cpu, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
			}
			slices.Sort(times)
			slices.Sort(cpu)
			b.ReportMetric(float64(times[len(times)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(cpu[len(cpu)/2].Microseconds())/1000, "median-cpu-ms")
		})
	}
}
