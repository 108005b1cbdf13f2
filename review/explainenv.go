package review

import (
	"maps"
	"slices"
	"strings"

	"github.com/agentbox-dev/agentbox/generator"
	"github.com/agentbox-dev/agentbox/internal/yamlpos"
)

// EnvVar is one variable of the agent's environment: the agent catalog's
// and env's, as the generated files set them in the agent container (every
// process there starts with it: the agent CLI, agentbox's own scripts such
// as verify's probe and the workspace entrypoint, and the user's shells).
type EnvVar struct {
	Name    string `json:"name"`
	Value   string `json:"value"`
	From    string `json:"from"`    // "catalog", "env", or "env over the catalog"
	Catalog string `json:"catalog"` // the catalog's value that env replaces, else ""
	// Gain says what a variable of this name can do ("" for none known):
	// run code in every process, send traffic or credentials elsewhere,
	// weaken what is trusted. Aspect is that gain's aspect (GainCode,
	// GainReach, GainSecrets, GainTrust), "" for none.
	Gain   string `json:"gain"`
	Aspect string `json:"aspect"`
	Origin
}

// envGain is what a variable can do: its aspect and the words for it.
type envGain struct{ aspect, words string }

// envGains names the variables whose value changes what runs or where
// traffic and credentials go, exactly or by prefix (a name ending in _).
// A variable not listed changes nothing agentbox knows of; one that
// overrides the catalog's value is a gain whatever its name (the catalog
// sets only what keeps the agent CLI pinned and quiet).
var envGains = map[string]envGain{
	"LD_PRELOAD":                   {GainCode, "loads a library of its choice into every dynamically linked process"},
	"LD_AUDIT":                     {GainCode, "loads a library of its choice into every dynamically linked process"},
	"LD_LIBRARY_PATH":              {GainCode, "makes every program load libraries from its directories first"},
	"LD_":                          {GainCode, "changes how the dynamic linker loads every program"},
	"NODE_OPTIONS":                 {GainCode, "runs code of its choice (--require, --import) in every Node.js process, the agent CLI's too"},
	"NODE_PATH":                    {GainCode, "makes Node.js load modules from its directories"},
	"PYTHONPATH":                   {GainCode, "makes Python import modules from its directories first"},
	"PYTHONSTARTUP":                {GainCode, "runs a file of its choice in every interactive Python"},
	"PYTHONHOME":                   {GainCode, "replaces Python's standard library"},
	"PERL5OPT":                     {GainCode, "runs code of its choice in every Perl process"},
	"PERL5LIB":                     {GainCode, "makes Perl load modules from its directories first"},
	"RUBYOPT":                      {GainCode, "runs code of its choice in every Ruby process"},
	"RUBYLIB":                      {GainCode, "makes Ruby load libraries from its directories first"},
	"BASH_ENV":                     {GainCode, "runs a file of its choice in every non-interactive bash, such as agentbox verify's probe script"},
	"ENV":                          {GainCode, "runs a file of its choice in every interactive POSIX shell"},
	"PROMPT_COMMAND":               {GainCode, "runs a command at every prompt of an interactive bash"},
	"SHELLOPTS":                    {GainCode, "changes how every bash runs its scripts"},
	"PATH":                         {GainCode, "chooses which program runs for every command name"},
	"GIT_SSH_COMMAND":              {GainCode, "runs a command of its choice whenever git uses SSH"},
	"GIT_SSH":                      {GainCode, "runs a program of its choice whenever git uses SSH"},
	"GIT_ASKPASS":                  {GainCode, "runs a program of its choice whenever git asks for a password"},
	"SSH_ASKPASS":                  {GainCode, "runs a program of its choice whenever ssh asks for a password"},
	"GIT_EXEC_PATH":                {GainCode, "replaces git's own programs"},
	"GIT_EDITOR":                   {GainCode, "runs a program of its choice whenever git opens an editor"},
	"GIT_PAGER":                    {GainCode, "runs a program of its choice whenever git pages output"},
	"GIT_EXTERNAL_DIFF":            {GainCode, "runs a program of its choice for every git diff"},
	"GIT_CONFIG_":                  {GainCode, "sets git configuration, which can name programs git runs (core.fsmonitor, core.hooksPath, filters)"},
	"GIT_CONFIG":                   {GainCode, "makes git read configuration of its choice, which can name programs git runs"},
	"GIT_CONFIG_GLOBAL":            {GainCode, "makes git read configuration of its choice, which can name programs git runs"},
	"GIT_CONFIG_SYSTEM":            {GainCode, "makes git read configuration of its choice, which can name programs git runs"},
	"GIT_DIR":                      {GainCode, "points git at another repository, whose configuration can name programs git runs"},
	"EDITOR":                       {GainCode, "chooses the program that tools run as the editor"},
	"VISUAL":                       {GainCode, "chooses the program that tools run as the editor"},
	"PAGER":                        {GainCode, "chooses the program that tools run as the pager"},
	"HTTPS_PROXY":                  {GainSecrets, "sends the agent's HTTPS traffic, its API credentials included, through a proxy of its choice"},
	"HTTP_PROXY":                   {GainSecrets, "sends HTTP traffic through a proxy of its choice"},
	"ALL_PROXY":                    {GainSecrets, "sends traffic through a proxy of its choice"},
	"https_proxy":                  {GainSecrets, "sends the agent's HTTPS traffic, its API credentials included, through a proxy of its choice"},
	"http_proxy":                   {GainSecrets, "sends HTTP traffic through a proxy of its choice"},
	"all_proxy":                    {GainSecrets, "sends traffic through a proxy of its choice"},
	"ANTHROPIC_BASE_URL":           {GainSecrets, "sends the agent's prompts, the project's code and its API key to another server"},
	"OPENAI_BASE_URL":              {GainSecrets, "sends the agent's prompts, the project's code and its API key to another server"},
	"GOOGLE_GEMINI_BASE_URL":       {GainSecrets, "sends the agent's prompts, the project's code and its API key to another server"},
	"NODE_TLS_REJECT_UNAUTHORIZED": {GainTrust, "turns off certificate checks in Node.js: any server on the path can read and change its traffic"},
	"NODE_EXTRA_CA_CERTS":          {GainTrust, "makes Node.js trust more certificate authorities"},
	"SSL_CERT_FILE":                {GainTrust, "replaces the certificate authorities that OpenSSL trusts"},
	"SSL_CERT_DIR":                 {GainTrust, "replaces the certificate authorities that OpenSSL trusts"},
	"REQUESTS_CA_BUNDLE":           {GainTrust, "replaces the certificate authorities that Python requests trusts"},
	"CURL_CA_BUNDLE":               {GainTrust, "replaces the certificate authorities that curl trusts"},
	"GIT_SSL_NO_VERIFY":            {GainTrust, "turns off git's certificate checks"},
	"GIT_SSL_CAINFO":               {GainTrust, "replaces the certificate authorities that git trusts"},
	"NPM_CONFIG_REGISTRY":          {GainTrust, "makes npm install packages from another registry"},
	"PIP_INDEX_URL":                {GainTrust, "makes pip install packages from another index"},
	"PIP_EXTRA_INDEX_URL":          {GainTrust, "makes pip install packages from another index too"},
}

// EnvGain returns what a variable called name can do, and its aspect; ""
// for a name that agentbox knows nothing of.
func EnvGain(name string) (aspect, words string) {
	if g, ok := envGains[name]; ok {
		return g.aspect, g.words
	}
	for _, prefix := range slices.Sorted(maps.Keys(envGains)) {
		if strings.HasSuffix(prefix, "_") && strings.HasPrefix(name, prefix) {
			return envGains[prefix].aspect, envGains[prefix].words
		}
	}
	return "", ""
}

// env describes the agent's environment: the catalog's variables and
// env's, by name.
func (o origins) env(p *generator.Plan) []EnvVar {
	out := []EnvVar{}
	for _, e := range p.Env {
		v := EnvVar{Name: e.Name, Value: e.Value, From: "catalog", Origin: o.at("agent")}
		for _, u := range o.cfg.Env {
			if u.Name != e.Name {
				continue
			}
			v.From, v.Origin = "env", o.at(yamlpos.Join("env", e.Name))
			for _, c := range o.cfg.Agent.Env {
				if c.Name == e.Name {
					v.From, v.Catalog = "env over the catalog", c.Value
				}
			}
		}
		v.Aspect, v.Gain = EnvGain(e.Name)
		if v.Catalog != "" && v.Catalog != v.Value && v.Gain == "" {
			v.Aspect, v.Gain = GainTrust, "replaces the value the agent's catalog entry sets ("+v.Catalog+"), which keeps the agent CLI pinned and quiet"
		}
		out = append(out, v)
	}
	return out
}
