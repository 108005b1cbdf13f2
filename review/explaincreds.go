package review

import (
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
)

// Credentials is what the agent gets of the user's credentials: the
// variables it takes from the host, and whether agentbox run copies the
// sandbox's login into each task.
type Credentials struct {
	// Variables are secrets (the sandbox and every task) and run.env
	// (tasks), sorted by name: only their names are in the generated
	// files, their values come from the host at up and run.
	Variables []HostVariable `json:"variables"`
	// LoginFiles are the files of the agent's state directory that hold
	// an interactive login; CopyLogin says whether agentbox run copies them
	// from the sandbox's state volume into each task's.
	LoginFiles []string `json:"login_files"`
	CopyLogin  bool     `json:"copy_login"`
	CopyOrigin Origin   `json:"copy_origin"`
}

// HostVariable is one variable the agent takes from the host.
type HostVariable struct {
	Name    string `json:"name"`
	Reaches string `json:"reaches"` // ReachesAll or ReachesTasks
	// Gateway are the profiles whose gateway holds this model key: there
	// the agent gets a placeholder (docs/gateway.md).
	Gateway []string `json:"gateway,omitempty"`
	Origin
}

// What a HostVariable reaches.
const (
	ReachesAll   = "sandbox and tasks"
	ReachesTasks = "tasks"
)

func (o origins) credentials() Credentials {
	cfg := o.cfg
	vars := []HostVariable{} // [] rather than null in JSON
	for i, n := range cfg.Secrets {
		vars = append(vars, HostVariable{Name: n, Reaches: ReachesAll, Origin: o.entryAt("secrets", cfg.SecretsPos[i])})
	}
	for i, n := range cfg.RunEnv {
		vars = append(vars, HostVariable{Name: n, Reaches: ReachesTasks, Origin: o.entryAt("run.env", cfg.RunEnvPos[i])})
	}
	slices.SortFunc(vars, func(a, b HostVariable) int { return strings.Compare(a.Name, b.Name) })
	for _, prof := range cfg.ProfileNames() {
		for _, n := range generator.HeldKeyNames(cfg, prof) {
			if i := slices.IndexFunc(vars, func(v HostVariable) bool { return v.Name == n }); i >= 0 {
				vars[i].Gateway = append(vars[i].Gateway, prof)
			}
		}
	}
	return Credentials{Variables: vars, LoginFiles: append([]string{}, cfg.Agent.Credentials...), CopyLogin: cfg.CopyLogin, CopyOrigin: o.at("run.copy_login")}
}

// credentialFacts are the facts DiffSandboxes compares of s.Credentials.
// A variable that reaches the sandbox too reaches more than one that
// reaches tasks alone.
func credentialFacts(s *Sandbox, add func(fact)) {
	for _, v := range s.Credentials.Variables {
		add(fact{what: "host variable", subject: v.Name, value: v.Reaches, origin: v.Origin, aspect: GainSecrets, rule: limit,
			num: map[string]float64{ReachesTasks: 1, ReachesAll: 2}[v.Reaches], gain: "the host's value of " + v.Name + " reaches the " + v.Reaches})
	}
	// Only when on: turning it on widens, off narrows.
	if s.Credentials.CopyLogin && len(s.Credentials.LoginFiles) > 0 {
		add(fact{what: "login copy", subject: "sandbox's login into tasks", value: strings.Join(s.Credentials.LoginFiles, ", "),
			origin: s.Credentials.CopyOrigin, aspect: GainSecrets, rule: grants})
	}
}
