package images

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
)

// latency delays every request by one simulated network round trip and
// counts the requests.
type latency struct {
	delay time.Duration
	inner http.RoundTripper
	n     atomic.Int64
}

func (l *latency) RoundTrip(req *http.Request) (*http.Response, error) {
	l.n.Add(1)
	select {
	case <-time.After(l.delay):
	case <-req.Context().Done():
		return nil, req.Context().Err()
	}
	return l.inner.RoundTrip(req)
}

// BenchmarkResolveAll20 resolves 20 references (20 repositories of one
// registry, images and indexes) as one `agentbox bump` would, with 50 ms
// of latency before every request. round-trips/op is the elapsed time in
// units of that latency: how many sequential waves of requests a run costs.
// connections/op counts the TCP connections the registry accepted.
func BenchmarkResolveAll20(b *testing.B) {
	const host = "registry.example.com"
	b.Run("anonymous", func(b *testing.B) { benchResolveAll20(b, nil, nil) })
	b.Run("token", func(b *testing.B) {
		creds := staticKeychain{host: authn.FromConfig(authn.AuthConfig{Username: "me", Password: "secret"})}
		benchResolveAll20(b, tokenAuth(host, "me", "secret"), creds)
	})
}

func benchResolveAll20(b *testing.B, wrap func(http.Handler) http.Handler, kc authn.Keychain) {
	const rtt = 50 * time.Millisecond
	if kc == nil {
		kc = authn.NewMultiKeychain()
	}
	f := newFixture(b, wrap)
	var refs []Ref
	for i := range 20 {
		s := fmt.Sprintf("registry.example.com/team/app%02d:v1", i)
		if i%2 == 0 {
			f.index(s)
		} else {
			f.image(s)
		}
		ref, err := ParseRef(s)
		if err != nil {
			b.Fatal(err)
		}
		refs = append(refs, ref)
	}
	lat := &latency{delay: rtt, inner: f.rt}
	f.conns.Store(0)
	b.ResetTimer()
	start := time.Now()
	for range b.N {
		// A fresh resolver per run, as each bump starts from nothing.
		r := NewRegistryResolver(RegistryOptions{Transport: lat, Keychain: kc})
		digests, errs := ResolveAll(context.Background(), r, refs, nil)
		if len(errs) > 0 || len(digests) != len(refs) {
			b.Fatal(errs)
		}
	}
	elapsed := time.Since(start)
	b.ReportMetric(float64(elapsed)/float64(rtt)/float64(b.N), "round-trips/op")
	b.ReportMetric(float64(lat.n.Load())/float64(b.N), "requests/op")
	b.ReportMetric(float64(f.conns.Load())/float64(b.N), "connections/op")
}
