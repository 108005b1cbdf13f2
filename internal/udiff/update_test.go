package udiff

import "flag"

// Accept the -update flag that `go test ./... -update` passes to every
// package (internal/testing/golden, which registers it elsewhere, imports udiff).
var _ = flag.Bool("update", false, "no golden files in this package")
