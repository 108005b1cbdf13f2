package images

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/agentbox-dev/agentbox/internal/neterr"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// The wording of the resolver's errors: one line for users that names what
// went wrong; what it shares with the npm client is in internal/neterr.

// describe says in one line what went wrong with ref.
func (r *RegistryResolver) describe(parent context.Context, ref Ref, nref name.Reference, err error) string {
	if s := neterr.ContextError(parent, err, r.timeout); s != "" {
		return s
	}
	if errors.Is(err, errMalformed) {
		return "malformed response: the registry sent no usable digest and its answer to GET is not a manifest"
	}
	var terr *transport.Error
	if errors.As(err, &terr) {
		if isPing(terr) && terr.StatusCode == http.StatusNotFound {
			return "not a container registry (GET /v2/ answered http 404)"
		}
		switch terr.StatusCode {
		case http.StatusNotFound:
			if hasCode(terr, transport.NameUnknownErrorCode) {
				return fmt.Sprintf("repository %q not found", nref.Context().RepositoryStr())
			}
			if ref.Digest != "" {
				return fmt.Sprintf("digest %s not found in repository %q", ref.Digest, nref.Context().RepositoryStr())
			}
			return fmt.Sprintf("tag %q not found in repository %q", ref.Tag, nref.Context().RepositoryStr())
		case http.StatusUnauthorized, http.StatusForbidden:
			return fmt.Sprintf("authentication refused (%s): check your credentials for %s (docker login) and that the repository exists",
				neterr.Status(terr.StatusCode), nref.Context().RegistryStr())
		}
		return neterr.StatusError(terr.StatusCode, r.attempts)
	}
	return neterr.DescribeNetwork(err, r.attempts)
}

func hasCode(terr *transport.Error, code transport.ErrorCode) bool {
	for _, d := range terr.Errors {
		if d.Code == code {
			return true
		}
	}
	return false
}
