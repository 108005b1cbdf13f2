//go:build k8s

package k8stest

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// sysctls are the kernel settings the kubelet and the bridge plugin change.
var sysctls = []string{"vm/overcommit_memory", "vm/panic_on_oom", "kernel/panic", "kernel/panic_on_oops",
	"kernel/keys/root_maxkeys", "kernel/keys/root_maxbytes", "net/ipv4/ip_forward"}

// hostState is what the cluster changes on the machine.
type hostState struct {
	chains  []string // iptables chains named KUBE-*, as "iptables -t nat KUBE-X"
	bridge  bool     // the CNI bridge exists
	mounts  []string // mount points under the state directory
	cgroups []string // kubepods cgroup directories
	procs   []string // processes run from the binary cache or the state directory
	sysctls map[string]string
}

func snapshot(t *testing.T, c *cluster) hostState {
	t.Helper()
	var h hostState
	for _, ipt := range []string{"iptables", "ip6tables"} {
		for _, table := range []string{"filter", "nat", "mangle"} {
			out, err := run(time.Minute, "", ipt, "-w", "-t", table, "-S")
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range kubeChain.FindAllString(out, -1) {
				h.chains = append(h.chains, fmt.Sprintf("%s -t %s %s", ipt, table, ch))
			}
		}
	}
	h.chains = slices.Compact(slices.Sorted(slices.Values(h.chains)))
	_, err := os.Stat(filepath.Join("/sys/class/net", c.env["BRIDGE"]))
	h.bridge = err == nil
	mi, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(mi), "\n") {
		if f := strings.Fields(l); len(f) > 4 && under(f[4], c.env["STATE"]) {
			h.mounts = append(h.mounts, f[4])
		}
	}
	h.cgroups, _ = filepath.Glob("/sys/fs/cgroup/*/kubepods")
	h.procs = procsUnder(c.env["STATE"], c.env["BIN"])
	h.sysctls = map[string]string{}
	for _, s := range sysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", s))
		if err != nil {
			t.Fatal(err)
		}
		h.sysctls[s] = strings.TrimSpace(string(b))
	}
	return h
}

func under(p, dir string) bool { return p == dir || strings.HasPrefix(p, dir+"/") }

// procsUnder lists the processes whose command line names one of dirs.
func procsUnder(dirs ...string) []string {
	var out []string
	ps, _ := filepath.Glob("/proc/[0-9]*/cmdline")
	for _, p := range ps {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue
		}
		cmd := strings.ReplaceAll(string(b), "\x00", " ")
		for _, d := range dirs {
			if strings.Contains(cmd, d+"/") {
				out = append(out, filepath.Base(filepath.Dir(p))+": "+cmd)
				break
			}
		}
	}
	return out
}

// downAndCheck stops the cluster and checks that the machine is as before.
func (c *cluster) downAndCheck(before hostState) {
	t := c.t
	t0 := time.Now()
	if _, err := run(5*time.Minute, "", "bash", c.script, "down"); err != nil {
		t.Errorf("cluster.sh down: %v", err)
	}
	t.Logf("k8s timing: cluster.sh down         %6.1f s", time.Since(t0).Seconds())
	after := snapshot(t, c)
	for what, left := range map[string][]string{
		"iptables chains": after.chains, "mounts": after.mounts,
		"cgroups": after.cgroups, "processes": after.procs,
	} {
		if len(left) > 0 {
			t.Errorf("after down, %s are left:\n%s", what, strings.Join(left, "\n"))
		}
	}
	if after.bridge {
		t.Errorf("after down, the bridge %s is left", c.env["BRIDGE"])
	}
	for _, s := range sysctls {
		if after.sysctls[s] != before.sysctls[s] {
			t.Errorf("after down, %s = %s; it was %s", s, after.sysctls[s], before.sysctls[s])
		}
	}
}
