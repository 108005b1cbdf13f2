package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/task"
)

// TestDownVolumesImages: down --volumes removes every volume of the
// sandbox's compose project, those compose down removed and those it left
// (another profile's), and names each; one in use is named with docker's
// reason and down exits 1. --images removes the two images, named.
func TestDownVolumesImages(t *testing.T) {
	dir := project(t, "agent-claude")
	for _, tt := range []struct {
		name       string
		args       []string
		busy       string
		code       int
		wantRan    []string
		wantNotRan []string
		stderr     []string
	}{
		{name: "plain down keeps volumes and images", args: []string{"down"},
			wantRan:    []string{"compose -f .agentbox/docker-compose.yml -p agentbox down --remove-orphans"},
			wantNotRan: []string{"volume", "rmi", "--volumes"}},
		{name: "volumes", args: []string{"down", "--volumes"},
			wantRan: []string{"compose -f .agentbox/docker-compose.yml -p agentbox down --remove-orphans --volumes",
				"volume rm agentbox_locked-workspace"},
			wantNotRan: []string{"rmi"},
			stderr: []string{"agentbox: removed volume agentbox_agent-state\n", "agentbox: removed volume agentbox_locked-workspace\n",
				"agentbox: removed volume agentbox_workspace\n"}},
		{name: "volume in use", args: []string{"down", "--volumes"}, busy: "agentbox_locked-workspace", code: exitError,
			stderr: []string{"agentbox: removed volume agentbox_workspace\n",
				"volume agentbox_locked-workspace not removed: Error response from daemon: remove agentbox_locked-workspace: volume is in use"}},
		{name: "images", args: []string{"down", "--images"},
			wantRan:    []string{"rmi agentbox-agent:latest", "rmi agentbox-egress:latest"},
			wantNotRan: []string{"volume rm", "--volumes"},
			stderr:     []string{"agentbox: removed image agentbox-agent:latest\n", "agentbox: removed image agentbox-egress:latest\n"}},
		{name: "image in use", args: []string{"down", "--images"}, busy: "agentbox-agent:latest", code: exitError,
			stderr: []string{"agentbox: removed image agentbox-egress:latest\n", "image agentbox-agent:latest not removed: Error response from daemon: conflict"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_STATE_HOME", t.TempDir())
			log := fakeDocker(t, "ok")
			vols := filepath.Join(t.TempDir(), "volumes")
			writeFile(t, vols, []byte("agentbox_workspace\nagentbox_agent-state\nagentbox_locked-workspace\n"))
			t.Setenv("FAKE_VOLUMES", vols)
			t.Setenv("FAKE_VOLUMES_LEFT", "agentbox_locked-workspace\n") // compose down removed its profile's
			t.Setenv("FAKE_IMAGES", "1")
			t.Setenv("FAKE_BUSY", tt.busy)
			_, stderr, code := runIn(t, dir, tt.args...)
			if code != tt.code {
				t.Errorf("exit %d, want %d: %s", code, tt.code, stderr)
			}
			data, _ := os.ReadFile(log)
			for _, w := range tt.wantRan {
				if !strings.Contains(string(data), w+"\n") {
					t.Errorf("did not run %q:\n%s", w, data)
				}
			}
			for _, w := range tt.wantNotRan {
				if strings.Contains(string(data), w) {
					t.Errorf("ran %q:\n%s", w, data)
				}
			}
			for _, w := range tt.stderr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tt.busy != "" && strings.Contains(stderr, "removed volume "+tt.busy) {
				t.Errorf("names %s removed:\n%s", tt.busy, stderr)
			}
		})
	}
}

// TestDownImagesRefusedWithTasks: the tasks run on the sandbox's images,
// so down --images refuses while agentbox has a task of the sandbox, before
// anything is stopped or removed, and names the tasks.
func TestDownImagesRefusedWithTasks(t *testing.T) {
	dir := project(t, "agent-claude")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	rec := &task.Record{Name: "fix-1", State: task.StateExited, Started: time.Now()}
	if err := os.MkdirAll(mustTaskDir(t, "agentbox", "fix-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := rec.Write("agentbox"); err != nil {
		t.Fatal(err)
	}
	log := fakeDocker(t, "ok")
	_, stderr, code := runIn(t, dir, "down", "--images", "--volumes")
	if code != exitError || !strings.Contains(stderr, "not removing anything: tasks fix-1 use the sandbox's images") {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if data, _ := os.ReadFile(log); strings.Contains(string(data), " down") || strings.Contains(string(data), "volume rm") || strings.Contains(string(data), "rmi ") {
		t.Errorf("ran:\n%s", data)
	}
}

// TestDownImagesPushed: with kubernetes.registry, --images also removes the
// local tags agentbox build --push made (never the registry's copies).
func TestDownImagesPushed(t *testing.T) {
	dir := project(t, "full")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	log := fakeDocker(t, "ok")
	t.Setenv("FAKE_IMAGES", "1")
	t.Setenv("FAKE_PUSHED", "1")
	_, stderr, code := runIn(t, dir, "down", "--images")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var removed []string
	for _, l := range strings.Split(stderr, "\n") {
		if img, ok := strings.CutPrefix(l, "agentbox: removed image "); ok {
			removed = append(removed, img)
		}
	}
	want := []string{"acme-api-agent:latest", "acme-api-egress:latest",
		"registry.acme.test:5000/sandboxes/acme-api-agent:0123abcd", "registry.acme.test:5000/sandboxes/acme-api-agent:4567ef01",
		"registry.acme.test:5000/sandboxes/acme-api-egress:0123abcd", "registry.acme.test:5000/sandboxes/acme-api-egress:4567ef01"}
	if strings.Join(removed, " ") != strings.Join(want, " ") {
		t.Errorf("removed %q, want %q", removed, want)
	}
	if data, _ := os.ReadFile(log); strings.Contains(string(data), "push") || strings.Contains(string(data), "rmi -f") {
		t.Errorf("ran:\n%s", data)
	}
}
