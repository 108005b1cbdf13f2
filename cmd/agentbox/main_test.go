package main

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestMain lets a test run the test binary as agentbox itself, main and
// all: AGENTBOX_TEST_MAIN=1 in its environment, agentbox's arguments as
// its own.
func TestMain(m *testing.M) {
	if os.Getenv("AGENTBOX_TEST_MAIN") == "1" {
		main()
	}
	// agentbox's state (up's records, tasks) and cache (the check memo) in
	// directories of the tests' own unless a test names them.
	var made []string
	for _, v := range []string{"XDG_STATE_HOME", "XDG_CACHE_HOME"} {
		if os.Getenv(v) == "" {
			d, err := os.MkdirTemp("", "agentbox-test-"+strings.ToLower(v)+"-")
			if err != nil {
				panic(err)
			}
			os.Setenv(v, d)
			made = append(made, d)
		}
	}
	code := m.Run()
	for _, d := range made {
		os.RemoveAll(d)
	}
	os.Exit(code)
}

// TestInterruptCancelsBump: Ctrl-C (SIGINT) while bump waits on a
// registry that does not answer ends agentbox at once, exit 1, saying it
// was interrupted and that nothing was written. Before main installed
// signal.NotifyContext, the signal killed the process (exit status -1,
// nothing said); and the requests themselves were never canceled.
func TestInterruptCancelsBump(t *testing.T) {
	t.Parallel()
	asked := make(chan struct{}, 1)
	reg := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case asked <- struct{}{}:
		default:
		}
		<-r.Context().Done() // hangs until the client gives up
	}))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://") // 127.0.0.1:port: plain http, no network
	dir := bumpProject(t, "agent: none\nimage: {base: \""+host+"/base:1\"}\negress: {image: \""+host+"/egress:1\"}\n", "")
	before := readAll(t, dir)

	cmd := exec.Command(os.Args[0], "bump", "-C", dir)
	cmd.Env = append(os.Environ(), "AGENTBOX_TEST_MAIN=1", "HOME="+t.TempDir(), "DOCKER_CONFIG="+t.TempDir())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case <-asked:
	case err := <-done:
		t.Fatalf("bump ended before asking the registry: %v\n%s", err, stderr.String())
	case <-time.After(30 * time.Second):
		cmd.Process.Kill()
		t.Fatal("bump never asked the registry")
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	var err error
	select {
	case err = <-done:
	case <-time.After(5 * time.Second):
		cmd.Process.Kill()
		t.Fatalf("bump still running 5 s after SIGINT; stderr %q", stderr.String())
	}
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != exitError || stdout.Len() != 0 ||
		stderr.String() != "agentbox: bump interrupted (interrupt signal received); nothing was written\n" {
		t.Errorf("%v, stdout %q, stderr %q", err, stdout.String(), stderr.String())
	}
	if !sameTree(before, readAll(t, dir)) {
		t.Error("an interrupted bump changed files")
	}
}
