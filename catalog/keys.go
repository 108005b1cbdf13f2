package catalog

// ModelKey is how an agent CLI sends a model provider's credential: the
// variable it reads the credential from, the variable it reads the
// provider's base URL from, and the header the credential travels in. With
// the gateway, agentbox gives the agent a placeholder in Name and the
// gateway's listener in BaseVar, and the gateway sets Header upstream
// (docs/gateway.md, "Keys outside the sandbox").
type ModelKey struct {
	Name    string // the credential's variable
	BaseVar string // the base URL's variable
	// Default is the provider's base URL when env: does not set BaseVar;
	// "" when the CLI sends this credential only to an endpoint of the
	// user's (the gateway then holds it only when env: sets BaseVar).
	Default string
	Header  string // lower-case
	Bearer  bool   // the header's value is "Bearer " and the credential
	// TypeVar, when set, is a variable of env: that chooses the header:
	// TypeHeaders maps its values to a header and Bearer.
	TypeVar     string
	TypeHeaders map[string]KeyHeader
}

// KeyHeader is a header and whether its value is "Bearer " and the key.
type KeyHeader struct {
	Header string
	Bearer bool
}

// modelKeys, by Name. From the vendors' documentation (2026): Claude Code
// sends an API key in x-api-key and a token (ANTHROPIC_AUTH_TOKEN, the
// subscription's CLAUDE_CODE_OAUTH_TOKEN) as a bearer token; Codex and
// OpenCode's openai provider a bearer token to OPENAI_BASE_URL (which
// includes /v1); Gemini CLI x-goog-api-key; Copilot CLI's own provider
// (BYOK) by its type: openai (the default) a bearer token, anthropic
// x-api-key, azure api-key.
//
// The keys of one BaseVar are in the order the gateway prefers them when
// several were handed over (it sends one: the first): for claude, its own
// order (its documentation, 2026: ANTHROPIC_AUTH_TOKEN, then
// ANTHROPIC_API_KEY, then CLAUDE_CODE_OAUTH_TOKEN), so that holding the
// keys at the gateway does not change which account pays; for Copilot's
// provider, the API key (agentbox's choice, not measured against the CLI).
var modelKeys = []ModelKey{
	{Name: "ANTHROPIC_AUTH_TOKEN", BaseVar: "ANTHROPIC_BASE_URL", Default: "https://api.anthropic.com", Header: "authorization", Bearer: true},
	{Name: "ANTHROPIC_API_KEY", BaseVar: "ANTHROPIC_BASE_URL", Default: "https://api.anthropic.com", Header: "x-api-key"},
	{Name: "CLAUDE_CODE_OAUTH_TOKEN", BaseVar: "ANTHROPIC_BASE_URL", Default: "https://api.anthropic.com", Header: "authorization", Bearer: true},
	{Name: "COPILOT_PROVIDER_API_KEY", BaseVar: "COPILOT_PROVIDER_BASE_URL", Header: "authorization", Bearer: true,
		TypeVar: "COPILOT_PROVIDER_TYPE", TypeHeaders: map[string]KeyHeader{
			"openai": {"authorization", true}, "anthropic": {"x-api-key", false}, "azure": {"api-key", false}}},
	{Name: "COPILOT_PROVIDER_BEARER_TOKEN", BaseVar: "COPILOT_PROVIDER_BASE_URL", Header: "authorization", Bearer: true},
	{Name: "GEMINI_API_KEY", BaseVar: "GOOGLE_GEMINI_BASE_URL", Default: "https://generativelanguage.googleapis.com", Header: "x-goog-api-key"},
	{Name: "OPENAI_API_KEY", BaseVar: "OPENAI_BASE_URL", Default: "https://api.openai.com/v1", Header: "authorization", Bearer: true},
}

// ModelKeys returns the model credentials the gateway can hold, by Name.
func ModelKeys() []ModelKey { return modelKeys }

// LookupModelKey returns the model credential of variable name.
func LookupModelKey(name string) (ModelKey, bool) {
	for _, k := range modelKeys {
		if k.Name == name {
			return k, true
		}
	}
	return ModelKey{}, false
}

// KeyPlaceholder is what the agent finds in a credential's variable when
// the gateway holds the credential: not a key of any provider.
const KeyPlaceholder = "agentbox-gateway-holds-this-key"
