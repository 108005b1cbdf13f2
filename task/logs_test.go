package task

import (
	"strings"
	"testing"
	"time"
)

// TestLogsArgs: what a task's logs show, as docker's and kubectl's flags
// (kubectl takes --since-time in whole seconds).
func TestLogsArgs(t *testing.T) {
	since := time.Date(2026, 11, 27, 6, 0, 0, 5e8, time.FixedZone("x", 3600))
	l := Logs{Follow: true, Tail: "50", Since: since}
	if got := strings.Join(l.DockerArgs(), " "); got != "--follow --tail 50 --since 2026-11-27T05:00:00.5Z" {
		t.Errorf("docker: %s", got)
	}
	if got := strings.Join(l.KubectlArgs(), " "); got != "--follow --tail=50 --since-time=2026-11-27T05:00:00Z" {
		t.Errorf("kubectl: %s", got)
	}
	if len((Logs{}).DockerArgs())+len((Logs{}).KubectlArgs()) != 0 {
		t.Error("all of the log asks for flags")
	}
}
