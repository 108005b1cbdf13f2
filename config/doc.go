// Package config owns agentbox.yaml: its wire format (strict YAML into wire
// structs), loading, validation into the typed Config that the rest of
// agentbox assumes valid, the limits, and the JSON Schema generated from the
// wire types. It neither plans nor renders; the generator's pipeline starts
// from a Config.
package config
