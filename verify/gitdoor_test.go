package verify

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/agentbox-dev/agentbox/internal/testing/testenv"
)

// TestVerifyGitDoor: the "git front door" probe sends git's smart-HTTP
// request of one ref update to the door on 127.0.0.1, and passes only when
// the door refuses it by itself ("not allowed"); a door that takes the push,
// or none listening, fails it.
func TestVerifyGitDoor(t *testing.T) {
	testenv.RequireProgram(t, "bash")
	for _, c := range []struct {
		what, answer, want string
		listen             bool
	}{
		{"refused", "\x00\x1b[31mpushes to this repository are not allowed", "PASS", true},
		{"taken", "000eunpack ok\n0000", "FAIL", true},
		{"no door", "", "FAIL", false},
	} {
		t.Run(c.what, func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			port := ln.Addr().(*net.TCPAddr).Port
			got := make(chan *http.Request, 1)
			var body []byte
			if c.listen {
				defer ln.Close()
				go func() {
					conn, err := ln.Accept()
					if err != nil {
						return
					}
					defer conn.Close()
					req, err := http.ReadRequest(bufio.NewReader(conn))
					if err == nil {
						body, _ = io.ReadAll(req.Body)
					}
					fmt.Fprintf(conn, "HTTP/1.1 200 OK\r\nContent-Type: application/x-git-receive-pack-result\r\nContent-Length: %d\r\n\r\n%s", len(c.answer), c.answer)
					got <- req
				}()
			} else {
				ln.Close()
			}
			cmd := exec.Command("bash", "-s", "--", "network")
			cmd.Env = append(os.Environ(), "AGENTBOX_VERIFY_WORKSPACE=/nonexistent", "AGENTBOX_VERIFY_UNLISTED_NAME=x.invalid",
				"AGENTBOX_VERIFY_UNLISTED_ADDRESS=127.0.0.1:1", "AGENTBOX_VERIFY_RESOLVER=127.0.0.1", "AGENTBOX_VERIFY_IPV6_ADDRESS=[::1]:1",
				"AGENTBOX_VERIFY_METADATA_ADDRESS=127.0.0.1:2", "AGENTBOX_VERIFY_MEMORY_BYTES=1048576", "AGENTBOX_VERIFY_PIDS=64",
				"AGENTBOX_VERIFY_ORIGIN=/nonexistent", "AGENTBOX_VERIFY_NETWORK=allowlist",
				fmt.Sprintf("AGENTBOX_VERIFY_FORGE=git.example.test %d", port))
			cmd.Stdin = strings.NewReader(Script)
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			ps, err := Parse(out)
			if err != nil {
				t.Fatal(err)
			}
			var row *Probe
			for i := range ps {
				if ps[i].Area == "network" && ps[i].Probe == "git front door" {
					row = &ps[i]
				}
			}
			if row == nil || row.Result != c.want || strings.ContainsAny(row.Happened, "\x00\x1b") {
				t.Fatalf("the probe's row: %+v, want %s:\n%s", row, c.want, out)
			}
			if !c.listen {
				return
			}
			req := <-got
			if req == nil || req.Method != "POST" || req.URL.Path != "/agentbox-verify/probe.git/git-receive-pack" ||
				req.Header.Get("Content-Type") != "application/x-git-receive-pack-request" || req.ContentLength != int64(len(body)) {
				t.Fatalf("the door got %+v", req)
			}
			zero, one := strings.Repeat("0", 40), strings.Repeat("1", 40)
			update := zero + " " + one + " refs/heads/agentbox-verify-probe\x00report-status\n"
			if want := fmt.Sprintf("%04x%s0000", len(update)+4, update); !bytes.Equal(body, []byte(want)) {
				t.Errorf("the push's body: %q, want %q", body, want)
			}
		})
	}
}
