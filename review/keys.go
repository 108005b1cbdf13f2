package review

// KeyRole is how one key of agentbox.yaml reaches the review: Part is the
// part of the Sandbox (a path of explain's JSON output) that describes
// what the key grants, and diff compares; Reason, for a key that changes
// nothing the agent can do, says why. A key has exactly one of the two.
type KeyRole struct {
	Part   string
	Reason string
}

// Keys is every key of agentbox.yaml, named as the JSON Schema's paths
// ("[]" an item of a list, "*" any profile): TestKeysDescribed walks the
// schema and fails on a key that is missing here, so a new key cannot be
// forgotten by the review.
var Keys = map[string]KeyRole{
	"version": {Reason: "the schema's version: 1 is the only value"},
	"name":    {Part: "name"},
	"agent":   {Part: "agent"},

	"image.base":     {Part: "pins"},
	"image.packages": {Part: "pins"},
	"image.user.uid": {Part: "privileges.uid"},
	"image.user.gid": {Part: "privileges.gid"},
	"egress.image":   {Part: "pins"},

	"network.services":        {Part: "network.domains"},
	"network.domains[].host":  {Part: "network.domains"},
	"network.domains[].ports": {Part: "network.domains"},
	"network.cidrs[].cidr":    {Part: "network.cidrs"},
	"network.cidrs[].ports":   {Part: "network.cidrs"},
	"network.ports":           {Part: "network.domains"},

	"resources.cpus":   {Part: "privileges.cpus"},
	"resources.memory": {Part: "privileges.memory"},
	"resources.pids":   {Part: "privileges.pids"},

	"env":     {Part: "env"},
	"secrets": {Part: "credentials.variables"},

	"workspace.path":     {Part: "filesystem.mounts"},
	"workspace.readonly": {Part: "filesystem.readonly"},
	"workspace.writable": {Part: "filesystem.writable"},
	"workspace.hidden":   {Part: "filesystem.hidden"},

	"devcontainer.ide":        {Part: "devcontainer.ide"},
	"devcontainer.extensions": {Part: "devcontainer.extensions"},

	"verify.allowed":          {Reason: "a target of agentbox verify's probe, which must connect: the policy decides whether it may"},
	"verify.unlisted_name":    {Reason: "a name agentbox verify's probe expects not to resolve: a test of the policy, not part of it"},
	"verify.unlisted_address": {Reason: "an address agentbox verify's probe expects to be refused: a test of the policy, not part of it"},
	"verify.resolver":         {Reason: "a resolver agentbox verify's probe asks, expecting the filter's answers: a test of the policy, not part of it"},
	"verify.ipv6_address":     {Reason: "an address agentbox verify's probe expects to be refused: a test of the policy, not part of it"},
	"verify.metadata_address": {Reason: "an address agentbox verify's probe expects to be refused: a test of the policy, not part of it"},

	"run.timeout":     {Part: "time.timeout"},
	"run.max_timeout": {Part: "time.max_timeout"},
	"run.env":         {Part: "credentials.variables"},
	"run.copy_login":  {Part: "credentials.copy_login"},

	"elevation.allowed":         {Part: "profiles[].elevation"},
	"elevation.max_duration":    {Part: "elevation.max_duration"},
	"elevation.request_timeout": {Part: "elevation.request_timeout"},
	"elevation.never":           {Part: "elevation.never"},

	"profile":                              {Part: "default_profile"},
	"profiles.*.from":                      {Part: "profiles[].from"},
	"profiles.*.network.services":          {Part: "profiles[].admits"},
	"profiles.*.network.domains[].host":    {Part: "profiles[].admits"},
	"profiles.*.network.domains[].ports":   {Part: "profiles[].admits"},
	"profiles.*.network.cidrs[].cidr":      {Part: "profiles[].admits"},
	"profiles.*.network.cidrs[].ports":     {Part: "profiles[].admits"},
	"profiles.*.network.ports":             {Part: "profiles[].admits"},
	"profiles.*.resources.cpus":            {Part: "profiles[].cpus"},
	"profiles.*.resources.memory":          {Part: "profiles[].memory"},
	"profiles.*.resources.pids":            {Part: "profiles[].pids"},
	"profiles.*.elevation.allowed":         {Part: "profiles[].elevation"},
	"profiles.*.elevation.max_duration":    {Part: "profiles[].elevation_limits.max_duration"},
	"profiles.*.elevation.request_timeout": {Part: "profiles[].elevation_limits.request_timeout"},
	"profiles.*.elevation.never":           {Part: "profiles[].elevation_limits.never"},
	"profiles.*.workspace.readonly":        {Part: "profiles[].readonly"},
	"profiles.*.workspace.hidden":          {Part: "profiles[].hidden_rules"},
	"git.name":                             {Part: "git.name"},
	"git.email":                            {Part: "git.email"},
	"git.forges[].host":                    {Part: "git.forges"},
	"git.forges[].token":                   {Part: "git.forges"},
	"git.forges[].repos":                   {Part: "git.forges"},
	"git.forges[].push[].repo":             {Part: "git.forges"},
	"git.forges[].push[].branches":         {Part: "git.forges"},
	"kubernetes.namespace":                 {Part: "kubernetes.namespace"},
	"kubernetes.registry":                  {Part: "kubernetes.registry"},
	"kubernetes.ttl_after_finished":        {Reason: "how long a finished task's Job and its logs stay in the cluster: the task has ended by then"},
}

// LockKeys is every key of agentbox.lock (lockfile.Keys' paths), as Keys
// is of agentbox.yaml: the part of the Sandbox that shows it, or why it
// changes nothing the agent can do. TestLockKeysDescribed fails on a key
// missing here.
var LockKeys = map[string]KeyRole{
	"version":                      {Reason: "the lock format's version: agentbox reads both and pins the same from each"},
	"images":                       {Part: "pins"},
	"debian.snapshot":              {Part: "pins"},
	"debian.security_snapshot":     {Part: "pins"},
	"debian.releases":              {Part: "pins"},
	"debian.packages.*.*.packages": {Part: "pins"},
	"debian.packages.*.*.closure":  {Reason: "bump's record of the whole dependency closure it resolved, for its own report: no generated file uses it; the snapshots and the packages' versions decide what is installed"},
	"npm.*.version":                {Part: "pins"},
	// An npm package of the agent CLI's tree: each field goes into the
	// image's package-lock.json, so the tree's pin (its digest) moves with
	// any; supplyRows names the package for the ones that matter.
	"npm.*.packages.*.name":                  {Part: "pins"},
	"npm.*.packages.*.version":               {Part: "pins"},
	"npm.*.packages.*.integrity":             {Part: "pins"},
	"npm.*.packages.*.optional":              {Part: "pins"},
	"npm.*.packages.*.install_script":        {Part: "pins"},
	"npm.*.packages.*.dependencies":          {Part: "pins"},
	"npm.*.packages.*.optional_dependencies": {Part: "pins"},
	"npm.*.packages.*.peer_dependencies":     {Part: "pins"},
	"npm.*.packages.*.optional_peers":        {Part: "pins"},
	"npm.*.packages.*.bin":                   {Part: "pins"},
	"npm.*.packages.*.os":                    {Part: "pins"},
	"npm.*.packages.*.cpu":                   {Part: "pins"},
	"npm.*.packages.*.libc":                  {Part: "pins"},
}
