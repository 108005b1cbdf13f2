package main

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentbox-dev/agentbox/sandbox"
	"github.com/agentbox-dev/agentbox/task"
)

// fakeDocker puts a docker (and, for mode "v1", a docker-compose) on PATH
// that records its arguments and acts as mode says: "ok", "nocompose", "v1",
// "fail" (compose commands exit 7), "ok-20.10" (Debian's docker 20.10 CLI
// and a daemon), or "down" and "down-20.10": the docker 28 and Debian's
// docker 20.10 CLI when the daemon is unreachable, as they answer `docker
// info` and `docker version` (with and without --format).
func fakeDocker(t *testing.T, mode string) (logFile string) {
	t.Helper()
	bin := t.TempDir()
	logFile = filepath.Join(bin, "argv.log")
	script := `#!/bin/sh
echo "$*" >> '` + logFile + `'
nodaemon="Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?"
case "` + mode + `:$1:$2" in
  nocompose:compose:*|v1:compose:*) echo "docker: 'compose' is not a docker command." >&2; exit 1 ;;
  *:compose:version) echo "2.40.3"; exit 0 ;;
  down:info:--format) echo "$nodaemon" >&2; exit 1 ;;
  down:info:*) printf 'Client:\n Version:    28.2.2\n\nServer:\n'; echo "$nodaemon" >&2; exit 1 ;;
  down:version:*) echo "$nodaemon" >&2; exit 1 ;;
  down-20.10:info:--format) echo 'template: :1:2: executing "" at <.ServerVersion>: reflect: indirection through nil pointer to embedded struct field Info' >&2; exit 1 ;;
  down-20.10:info:*) printf 'Client:\n Context:    default\n\nServer:\nERROR: %s\n' "$nodaemon"; echo "errors pretty printing info" >&2; exit 1 ;;
  down-20.10:version:--format) echo "$nodaemon" >&2; exit 1 ;;
  down-20.10:version:*) printf 'Client:\n Version:           20.10.24+dfsg1\n'; echo "$nodaemon" >&2; exit 1 ;;
  ok-20.10:info:*|ok-20.10:version:*) echo "20.10.24+dfsg1"; exit 0 ;;
  *:info:*|*:version:*) echo "28.2.2"; exit 0 ;;
  fail:compose:*) exit 7 ;;
esac
case "$*" in
  *" down --remove-orphans --volumes") [ -z "${FAKE_VOLUMES:-}" ] || printf '%s' "${FAKE_VOLUMES_LEFT:-}" > "$FAKE_VOLUMES" ;;
  "volume ls --quiet --filter label=com.docker.compose.project=agentbox") [ -z "${FAKE_VOLUMES:-}" ] || cat "$FAKE_VOLUMES" ;;
  "volume rm "*) case " ${FAKE_BUSY:-} " in *" $3 "*) echo "Error response from daemon: remove $3: volume is in use - [0123abcd]" >&2; exit 1 ;; esac ;;
  "image inspect --format {{.Id}} "*) case " ${FAKE_NO_BASE:-} " in *" $5 "*) exit 1 ;; esac ;;
  "pull "*) [ -z "${FAKE_PULL_FAILS:-}" ] || { echo "Error response from daemon: manifest for $2 not found" >&2; exit 1; } ;;
  "image inspect --format {{range .RepoTags}}{{println .}}{{end}} "*) for a; do last=$a; done; [ -z "${FAKE_IMAGES:-}" ] || echo "$last:latest" ;;
  "image ls --format {{.Repository}}:{{.Tag}} "*) [ -z "${FAKE_PUSHED:-}" ] || printf '%s:0123abcd\n%s:4567ef01\n' "$5" "$5" ;;
  "rmi "*) case " ${FAKE_BUSY:-} " in *" $2 "*) echo "Error response from daemon: conflict: unable to remove repository reference \"$2\" (must force) - container 0123abcd is using its referenced image 4567" >&2; exit 1 ;; esac; echo "Untagged: $2" ;;
  *" ps -q egress") echo egress-id ;;
  *" ps -q agent") echo agent-id ;;
  "inspect --format {{.State.StartedAt}} egress-id") echo "${FAKE_EGRESS_STARTED:-2026-01-01T10:00:00.1Z}" ;;
  "inspect --format {{.State.StartedAt}} agent-id") echo "${FAKE_AGENT_STARTED:-2026-01-01T10:00:01.2Z}" ;;
  "ps -a --filter label=com.docker.compose.project="*) printf '%s' "${FAKE_WORKING_DIRS:-}" ;;
  "ps --filter label=com.docker.compose.project="*"service=egress "*) [ -z "${FAKE_PROFILE:-}" ] || echo "egress-id $FAKE_PROFILE" ;;
  "ps -aq --no-trunc --filter label=com.docker.compose.project="*"-task-"*" --filter label=com.docker.compose.service=agent") [ -z "${FAKE_TASK_AGENT:-}" ] || echo "$FAKE_TASK_AGENT" ;;
  "inspect --format {{.State.Running}} {{.State.ExitCode}} {{.State.Status}} {{.State.FinishedAt}} "*) echo "true 0 running 0001-01-01T00:00:00Z" ;;
esac
exit 0
`
	if err := os.WriteFile(filepath.Join(bin, "docker"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	if mode == "v1" {
		if err := os.WriteFile(filepath.Join(bin, "docker-compose"), []byte("#!/bin/sh\necho 1.29.2\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", bin+":/usr/bin:/bin")
	return logFile
}

func TestSandboxCommands(t *testing.T) {
	dir := project(t, "agent-claude")
	prefix := "compose -f .agentbox/docker-compose.yml -p agentbox "
	locked := "compose -f .agentbox/profiles/locked.compose.yml -p agentbox "
	for _, tt := range []struct {
		args    []string
		running string // the profile label of the running egress container
		want    string // the docker compose command run
	}{
		{[]string{"up"}, "", prefix + "build"},
		{[]string{"up"}, "", prefix + "up -d --wait --remove-orphans"},
		{[]string{"up"}, "locked", prefix + "up -d --wait --remove-orphans"}, // up chooses: the default
		{[]string{"up", "--profile", "locked"}, "", locked + "build"},
		{[]string{"up", "--profile", "locked"}, "", locked + "up -d --wait --remove-orphans"},
		{[]string{"up", "--profile", "open"}, "", "compose -f .agentbox/profiles/open.compose.yml -p agentbox up -d --wait --remove-orphans"},
		{[]string{"down"}, "", prefix + "down --remove-orphans"},
		{[]string{"down"}, "locked", locked + "down --remove-orphans"},
		{[]string{"down"}, "gone", prefix + "down --remove-orphans"}, // a profile no longer configured
		{[]string{"logs", "egress"}, "", prefix + "logs egress"},
		{[]string{"logs", "-f"}, "balanced", prefix + "logs --follow"},
		{[]string{"logs", "egress", "--tail", "20", "--since", "2026-01-02T15:04:05+01:00"}, "", prefix + "logs --tail 20 --since 2026-01-02T14:04:05Z egress"},
		{[]string{"logs", "--tail", "all", "-f"}, "", prefix + "logs --follow"},
		{[]string{"logs", "--tail", "0", "-f"}, "", prefix + "logs --follow --tail 0"},
		{[]string{"shell"}, "balanced", prefix + "exec -T agent bash -l"},
		{[]string{"shell"}, "locked", locked + "exec -T agent bash -l"},
		{[]string{"shell", "--", "id", "-u"}, "balanced", prefix + "exec -T agent id -u"},
	} {
		t.Run(strings.Join(tt.args, " ")+" "+tt.running, func(t *testing.T) {
			log := fakeDocker(t, "ok")
			t.Setenv("FAKE_PROFILE", tt.running)
			if _, stderr, code := runIn(t, dir, tt.args...); code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, _ := os.ReadFile(log)
			lines := strings.Split(strings.TrimSpace(string(data)), "\n")
			if !slices.Contains(lines, tt.want) {
				t.Errorf("ran %q, want %q", lines, tt.want)
			}
			if slices.ContainsFunc(lines, func(l string) bool { return strings.Contains(l, "--force-recreate") }) {
				t.Errorf("recreated the agent although egress started first: %q", lines)
			}
		})
	}
}

func TestSandboxErrors(t *testing.T) {
	dir := project(t, "agent-claude")
	for _, tt := range []struct {
		name, mode string
		args       []string
		code       int
		want       string
	}{
		{"docker missing", "", []string{"up"}, exitError, "docker is not installed"},
		{"compose v2 missing", "nocompose", []string{"up"}, exitError, "docker compose (v2) is not available"},
		{"compose v1 only", "v1", []string{"up"}, exitError, "only compose v1 (docker-compose) is installed"},
		{"compose fails", "fail", []string{"up"}, exitError, "docker compose build failed (exit 7)"},
		{"unknown service", "ok", []string{"logs", "db"}, exitUsage, `unknown service "db"`},
		{"negative tail", "ok", []string{"logs", "--tail", "-5"}, exitUsage, `invalid --tail "-5": a number of lines (0 or more), or all`},
		{"tail not a number", "ok", []string{"logs", "--tail", "ten"}, exitUsage, `invalid --tail "ten"`},
		{"since not a time", "ok", []string{"logs", "--since", "yesterday"}, exitUsage, `invalid --since "yesterday": a positive duration (1h, 30m) or an RFC 3339 time`},
		{"since negative", "ok", []string{"logs", "egress", "--since", "-1h"}, exitUsage, `invalid --since "-1h"`},
		{"unknown profile", "ok", []string{"up", "--profile", "lokced"}, exitUsage, `--profile: unknown profile "lokced"; did you mean "locked"? valid values are "balanced", "locked", "open"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.mode == "" {
				t.Setenv("PATH", t.TempDir())
			} else {
				fakeDocker(t, tt.mode)
			}
			_, stderr, code := runIn(t, dir, tt.args...)
			if code != tt.code || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, tt.code, tt.want)
			}
		})
	}
	// With no daemon, every docker CLI gives the same one-line error (Debian's
	// 20.10 printed a Go template error for `docker info --format`).
	for _, mode := range []string{"down", "down-20.10"} {
		for _, cmd := range []string{"up", "verify", "shell", "down", "logs"} {
			t.Run(mode+" "+cmd, func(t *testing.T) {
				log := fakeDocker(t, mode)
				_, stderr, code := runIn(t, dir, cmd)
				want := "cannot reach the Docker daemon (is dockerd running?): Cannot connect to the Docker daemon at unix:///var/run/docker.sock. Is the docker daemon running?\n"
				if code != exitError || stderr != want {
					t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, want)
				}
				if data, _ := os.ReadFile(log); strings.Contains(string(data), "compose -f") {
					t.Errorf("docker compose ran:\n%s", data)
				}
			})
		}
	}
	t.Run("docker 20.10 with a daemon", func(t *testing.T) {
		log := fakeDocker(t, "ok-20.10")
		if _, stderr, code := runIn(t, dir, "down"); code != exitOK {
			t.Errorf("exit %d: %s", code, stderr)
		}
		if data, _ := os.ReadFile(log); !strings.Contains(string(data), "compose -f .agentbox/docker-compose.yml -p agentbox down") {
			t.Errorf("docker compose down did not run:\n%s", data)
		}
	})
	t.Run("stale generated files", func(t *testing.T) {
		log := fakeDocker(t, "ok")
		os.WriteFile(filepath.Join(dir, "agentbox.yaml"), []byte("agent: claude\nnetwork: {domains: [example.com]}\n"), 0o644)
		_, stderr, code := runIn(t, dir, "up")
		if code != exitError || !strings.Contains(stderr, "out of date") {
			t.Errorf("exit %d, stderr %q", code, stderr)
		}
		if data, _ := os.ReadFile(log); strings.Contains(string(data), " up ") {
			t.Errorf("docker compose up ran with stale files: %s", data)
		}
	})
}

// TestConfigBeforeDocker: a mistake in agentbox.yaml is reported before
// anything about Docker, so that it is not hidden behind a missing daemon.
func TestConfigBeforeDocker(t *testing.T) {
	for _, mode := range []string{"", "down", "down-20.10"} {
		for _, cmd := range []string{"up", "verify", "shell", "down", "logs"} {
			t.Run(mode+" "+cmd, func(t *testing.T) {
				dir := project(t, "agent-claude")
				writeFile(t, filepath.Join(dir, "agentbox.yaml"), []byte("agent: claude\nnetwrok: {}\n"))
				if mode == "" {
					t.Setenv("PATH", t.TempDir()) // no docker at all
				} else {
					fakeDocker(t, mode)
				}
				_, stderr, code := runIn(t, dir, cmd)
				want := "agentbox.yaml:2:1: unknown key \"netwrok\"; did you mean \"network\"?\n"
				if code != exitError || stderr != want {
					t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, want)
				}
			})
		}
	}
}

// up refuses a project whose .git is not a directory of its own before
// anything runs: Docker would follow a symlink wherever it points.
func TestUpNeedsGitDirectory(t *testing.T) {
	outside := t.TempDir()
	for _, tt := range []struct {
		name  string
		setup func(t *testing.T, dir string)
		want  string
	}{
		{"missing", func(t *testing.T, dir string) {}, "not a git repository"},
		{"symlink", func(t *testing.T, dir string) {
			if err := os.Symlink(outside, filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
		}, "is a symbolic link"},
		{"file", func(t *testing.T, dir string) {
			writeFile(t, filepath.Join(dir, ".git"), []byte("gitdir: /elsewhere/.git/worktrees/x\n"))
		}, "is a file"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := project(t, "agent-claude")
			if err := os.RemoveAll(filepath.Join(dir, ".git")); err != nil {
				t.Fatal(err)
			}
			tt.setup(t, dir)
			log := fakeDocker(t, "ok")
			_, stderr, code := runIn(t, dir, "up")
			if code != exitError || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want 1 and %q", code, stderr, tt.want)
			}
			if data, _ := os.ReadFile(log); strings.Contains(string(data), " up ") {
				t.Errorf("docker compose up ran: %s", data)
			}
		})
	}
}

// TestUpChecksLinksAgain: a link can change after generate, so up and
// verify check every mount source again before docker compose runs. down
// still works: stopping the sandbox must not depend on the project's state.
func TestUpChecksLinksAgain(t *testing.T) {
	dir := setupCase(t, filepath.Join(goldenDir, "agent-claude"))
	if _, stderr, code := runIn(t, dir, "generate"); code != exitOK {
		t.Fatalf("generate: %d %s", code, stderr)
	}
	if err := os.Rename(filepath.Join(dir, ".git"), filepath.Join(dir, "git.old")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc", filepath.Join(dir, ".git")); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"up", "verify"} {
		t.Run(cmd, func(t *testing.T) {
			log := fakeDocker(t, "ok")
			_, stderr, code := runIn(t, dir, cmd)
			want := map[string]string{
				"up":     ".git is a symbolic link",
				"verify": `".git" is a symbolic link to "/etc", which leads outside the project`,
			}[cmd]
			if code != exitError || !strings.Contains(stderr, want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitError, want)
			}
			if data, _ := os.ReadFile(log); strings.Contains(string(data), " up ") || strings.Contains(string(data), " exec ") {
				t.Errorf("docker compose ran although a mount source leads outside:\n%s", data)
			}
		})
	}
	t.Run("down", func(t *testing.T) {
		log := fakeDocker(t, "ok")
		if _, stderr, code := runIn(t, dir, "down"); code != exitOK {
			t.Errorf("down: exit %d: %s", code, stderr)
		}
		if data, _ := os.ReadFile(log); !strings.Contains(string(data), " down") {
			t.Errorf("down did not run docker compose down:\n%s", data)
		}
	})
}

// When the engine restarted egress after the agent started (compose did not
// see it), up recreates the agent, which would otherwise keep a network
// namespace with loopback only.
func TestUpFollowsRestartedEgress(t *testing.T) {
	dir := project(t, "agent-claude")
	log := fakeDocker(t, "ok")
	t.Setenv("FAKE_EGRESS_STARTED", "2026-01-01T10:05:00Z")
	t.Setenv("FAKE_AGENT_STARTED", "2026-01-01T10:00:01.2Z")
	_, stderr, code := runIn(t, dir, "up")
	if code != exitOK || !strings.Contains(stderr, "egress container restarted after the agent") {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(log)
	want := "compose -f .agentbox/docker-compose.yml -p agentbox up -d --wait --force-recreate --no-deps agent"
	if !strings.Contains(string(data), want) {
		t.Errorf("up did not recreate the agent:\n%s", data)
	}
}

// Two projects that share a compose project name would share containers
// and volumes: up refuses when the name's containers belong to another
// project directory, and starts when they are this project's own.
func TestUpRefusesAnotherProjectsName(t *testing.T) {
	dir := project(t, "agent-claude")
	abs, _ := filepath.Abs(filepath.Join(dir, ".agentbox"))
	for _, tt := range []struct {
		name, dirs string
		ok         bool
	}{
		{"none yet", "", true},
		{"its own", abs + "\n" + abs + "\n", true},
		{"another project's", abs + "\n/home/someone/other/.agentbox\n", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			log := fakeDocker(t, "ok")
			t.Setenv("FAKE_WORKING_DIRS", tt.dirs)
			_, stderr, code := runIn(t, dir, "up")
			data, _ := os.ReadFile(log)
			ran := strings.Contains(string(data), " up -d --wait")
			if tt.ok && (code != exitOK || !ran) {
				t.Errorf("exit %d, compose up ran %v: %s", code, ran, stderr)
			}
			if !tt.ok && (code != exitError || ran || !strings.Contains(stderr, `the compose project "agentbox" belongs to another project (/home/someone/other)`)) {
				t.Errorf("exit %d, compose up ran %v: %s", code, ran, stderr)
			}
		})
	}
}

// TestLogsSince: --since as a duration is a time before now, given to
// docker compose logs as an RFC 3339 time.
func TestLogsSince(t *testing.T) {
	dir := project(t, "agent-claude")
	log := fakeDocker(t, "ok")
	d := testDeps()
	now := time.Date(2026, 11, 27, 3, 0, 0, 0, time.UTC)
	d.now = func() time.Time { return now }
	if _, stderr, code := runInDeps(t, d, dir, "logs", "--since", "90m", "agent"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "compose -f .agentbox/docker-compose.yml -p agentbox logs --since 2026-11-27T01:30:00Z agent"
	if data, _ := os.ReadFile(log); !strings.Contains(string(data), want) {
		t.Errorf("ran:\n%s\nwant %q", data, want)
	}
}

// TestTaskLogsFlags: logs TASK passes --tail and --since to docker logs on
// the task's agent container.
func TestTaskLogsFlags(t *testing.T) {
	dir := project(t, "agent-claude")
	t.Setenv("XDG_STATE_HOME", t.TempDir())
	rec := &task.Record{Name: "fix-1", Project: "agentbox-task-fix-1", State: task.StateRunning, Started: time.Now()}
	if err := os.MkdirAll(mustTaskDir(t, "agentbox", "fix-1"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := rec.Write("agentbox"); err != nil {
		t.Fatal(err)
	}
	log := fakeDocker(t, "ok")
	t.Setenv("FAKE_TASK_AGENT", "task-agent-id")
	if _, stderr, code := runIn(t, dir, "logs", "fix-1", "--tail", "3", "--since", "2026-01-02T15:04:05Z"); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := "logs --tail 3 --since 2026-01-02T15:04:05Z task-agent-id"
	if data, _ := os.ReadFile(log); !slices.Contains(strings.Split(string(data), "\n"), want) {
		t.Errorf("ran:\n%s\nwant %q", data, want)
	}
}

func mustTaskDir(t *testing.T, project, name string) string {
	t.Helper()
	d, err := task.Dir(project, name)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// up, run and build have the daemon pull a base image it lacks before
// compose builds: docker pull goes through Docker's registry mirrors, the
// builder of Engine 20.10 does not.
func TestUpPullsMissingBases(t *testing.T) {
	dir := project(t, "agent-claude")
	refs, err := sandbox.BaseImages(dir)
	if err != nil || len(refs) != 2 {
		t.Fatalf("base images %q, %v: want the egress's and the agent's", refs, err)
	}
	for _, ref := range refs {
		if !strings.Contains(ref, "@sha256:") {
			t.Fatalf("base image %q is not pinned", ref)
		}
	}
	log := fakeDocker(t, "ok")
	t.Setenv("FAKE_NO_BASE", refs[1])
	if _, stderr, code := runIn(t, dir, "up"); code != exitOK {
		t.Fatalf("up: exit %d: %s", code, stderr)
	}
	data, _ := os.ReadFile(log)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	pull := slices.Index(lines, "pull "+refs[1])
	build := slices.Index(lines, "compose -f .agentbox/docker-compose.yml -p agentbox build")
	if pull < 0 || build < 0 || pull > build {
		t.Errorf("want pull %s before compose build: %q", refs[1], lines)
	}
	if slices.Contains(lines, "pull "+refs[0]) {
		t.Errorf("pulled %s, which the daemon has", refs[0])
	}

	log = fakeDocker(t, "ok")
	t.Setenv("FAKE_PULL_FAILS", "1")
	_, stderr, code := runIn(t, dir, "up")
	if code == exitOK || !strings.Contains(stderr, "docker pull "+refs[1]+": Error response from daemon: manifest") {
		t.Errorf("a failed pull: exit %d, stderr %q", code, stderr)
	}
	data, _ = os.ReadFile(log)
	if strings.Contains(string(data), " build") {
		t.Errorf("compose built after the pull failed: %s", data)
	}
}
