package images

// Accept the -update flag that `go test ./... -update` passes to every package.
import _ "github.com/agentbox-dev/agentbox/internal/testing/golden"
