package review

import (
	"cmp"
	"strconv"
	"strings"
)

// The facts of each part of a Sandbox, for DiffSandboxes: what each part
// allows or sets, with the rule that classifies its change and the aspect
// of what the agent gains. Profiles' facts are in explainprofiles.go, the
// credentials' in explaincreds.go, and hidden patterns are compared by
// hiddenRows (hidden.go).

func networkFacts(s *Sandbox, add func(fact)) {
	for _, d := range s.Network.Domains {
		for _, p := range d.Ports {
			add(fact{what: "destination", subject: d.Name + ":" + strconv.Itoa(int(p)), value: "allowed", origin: d.Origin, aspect: GainReach, rule: reaches})
		}
	}
	for _, c := range s.Network.CIDRs {
		for _, p := range c.Ports {
			add(fact{what: "destination", subject: c.Name + " port " + strconv.Itoa(int(p)), value: "allowed", origin: c.Origin, aspect: GainReach, rule: reaches})
		}
	}
}

// filesystemFacts: the mounts and the paths fetch refuses or accepts. The
// hidden patterns are compared by hiddenRows, on what they hide.
func filesystemFacts(s *Sandbox, add func(fact)) {
	for _, m := range s.Filesystem.Mounts {
		add(fact{what: "mount", subject: m.Type + " " + m.Source, value: m.Mode + " " + m.Target, origin: m.Origin, aspect: GainReach, rule: mounted})
	}
	for _, r := range s.Filesystem.ReadOnly {
		add(fact{what: "readonly", subject: r.Path, value: "refused by fetch", origin: r.Origin, aspect: GainReach, rule: refuses})
	}
	for _, r := range s.Filesystem.Writable {
		add(fact{what: "writable", subject: r.Path, value: "accepted by fetch", origin: r.Origin, aspect: GainReach, rule: grants})
	}
}

func privilegeFacts(s *Sandbox, add func(fact)) {
	pr := s.Privileges
	for _, c := range pr.Capabilities {
		add(fact{what: "capability", subject: c, value: "granted", aspect: GainReach, rule: grants})
	}
	add(fact{what: "no_new_privs", subject: "agent", value: strconv.FormatBool(pr.NoNewPrivs), aspect: GainReach, rule: limit, num: map[bool]float64{true: 0, false: 1}[pr.NoNewPrivs]})
	add(limitFact("memory", "agent", pr.Memory, memBytes(pr.Memory), pr.keys["memory"]))
	add(limitFact("pids", "agent", strconv.Itoa(pr.Pids), float64(pr.Pids), pr.keys["pids"]))
	add(limitFact("cpus", "agent", cmp.Or(pr.CPUs, noLimit), cpus(cmp.Or(pr.CPUs, noLimit)), pr.keys["cpus"]))
	add(fact{what: "uid", subject: "agent", value: strconv.Itoa(pr.UID), origin: pr.keys["uid"], aspect: GainNone, rule: neutral})
	add(fact{what: "gid", subject: "agent", value: strconv.Itoa(pr.GID), origin: pr.keys["gid"], aspect: GainNone, rule: neutral})
	add(fact{what: "agent", subject: "agent", value: s.Agent, origin: pr.keys["agent"], aspect: GainCode, rule: neutral})
	add(fact{what: "git name", subject: "agent's commits", value: s.Git.Name, origin: s.Git.nameOrigin, aspect: GainNone, rule: neutral})
	add(fact{what: "git email", subject: "agent's commits", value: s.Git.Email, origin: s.Git.emailOrigin, aspect: GainNone, rule: neutral})
	add(fact{what: "name", subject: "compose project", value: s.Name, origin: s.nameOrigin, aspect: GainNone, rule: neutral})
}

func limitFact(what, subject, value string, num float64, o Origin) fact {
	return fact{what: what, subject: subject, value: value, origin: o, aspect: GainResources, rule: limit, num: num}
}

// envFacts: every variable of env, and of the catalog's those that env
// replaces or that can run code (a catalog variable as the catalog sets it
// says nothing a reviewer must weigh: the agent's row says it).
func envFacts(s *Sandbox, add func(fact)) {
	for _, e := range s.Env {
		if e.From == "catalog" && e.Gain == "" {
			continue
		}
		f := fact{what: "env", subject: e.Name, value: e.Value, origin: e.Origin, aspect: e.Aspect, rule: runs, gain: e.Gain}
		if e.Gain == "" {
			f.aspect, f.rule = GainNone, neutral
		}
		add(f)
	}
}

func timeFacts(s *Sandbox, add func(fact)) {
	t := s.Time
	add(fact{what: "timeout", subject: "a task's deadline", value: t.Timeout, origin: t.TimeoutOrigin, aspect: GainTime, rule: limit, num: seconds(t.Timeout),
		gain: "a task without --timeout runs up to " + t.Timeout + " before it is stopped"})
	add(fact{what: "max_timeout", subject: "the longest --timeout", value: t.MaxTimeout, origin: t.MaxOrigin, aspect: GainTime, rule: limit, num: seconds(t.MaxTimeout),
		gain: "agentbox run --timeout may let a task run up to " + t.MaxTimeout})
}

// elevationFacts: the longest grant of agentbox allow and what it may
// never grant, for the top level (profile "") or a profile.
func elevationFacts(subject, profile string, e ElevationView, add func(fact)) {
	inherited := profile != "" && !strings.HasPrefix(e.MaxOrigin.Key, "profiles.")
	add(fact{what: "max_duration", subject: subject, value: e.MaxDuration, origin: e.MaxOrigin, aspect: GainTime, rule: limit,
		num: seconds(e.MaxDuration), profile: profile, inherited: inherited, gain: "a grant of agentbox allow may last up to " + e.MaxDuration})
	add(fact{what: "request_timeout", subject: subject + ": an agent's request", value: e.RequestTimeout, origin: e.RequestTimeoutOrigin, aspect: GainTime,
		rule: limit, num: seconds(e.RequestTimeout), profile: profile, inherited: profile != "" && !strings.HasPrefix(e.RequestTimeoutOrigin.Key, "profiles."),
		gain: "an agent's request may wait up to " + e.RequestTimeout + " for an approval"})
	for _, n := range e.Never {
		add(fact{what: "elevation never", subject: strings.TrimPrefix(subject+" ", "agentbox allow ") + n.Entry, value: "refused by allow",
			origin: n.Origin, aspect: GainReach, rule: refuses, gain: "agentbox allow may grant " + n.Entry, profile: profile, inherited: profile != "" && !strings.HasPrefix(n.Key, "profiles.")})
	}
}

func devcontainerFacts(s *Sandbox, add func(fact)) {
	d := s.DevContainer
	add(fact{what: "ide", subject: "Dev Container", value: d.IDE, origin: d.IDEOrigin, aspect: GainNone, rule: neutral})
	for _, e := range d.Extensions {
		add(fact{what: "extension", subject: e.ID, value: "installed", origin: e.Origin, aspect: GainCode, rule: runs,
			gain: "a VS Code extension runs in the agent container, with the agent's files and network"})
	}
	if k := s.Kubernetes; k != nil {
		add(fact{what: "kubernetes", subject: "namespace", value: k.Namespace, origin: withKey(k.Origin, "kubernetes.namespace", s), aspect: GainNone, rule: neutral})
		add(fact{what: "kubernetes", subject: "registry", value: k.Registry, origin: withKey(k.Origin, "kubernetes.registry", s), aspect: GainTrust, rule: neutral,
			gain: "the cluster's nodes pull the images from it: whoever can push there chooses what runs"})
	}
}

// withKey is key's origin where it is written in s, else o.
func withKey(o Origin, key string, s *Sandbox) Origin {
	if l := s.lines[key]; l != 0 {
		return Origin{Key: key, Line: l}
	}
	return o
}
