// Package generator compiles agentbox.yaml into the files of a sandbox. It is
// a pipeline of small stages: load and validate (package config: strict YAML
// into wire structs, then a Config) -> plan (defaults, catalogs, lock) ->
// render (pure, path -> bytes) -> check (every output through its
// ecosystem's parser) -> write or diff. Compile is its one entry point;
// CompileOptions says where it stops and what it reads. It never prints and
// never touches the network.
package generator
