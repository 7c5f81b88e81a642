package image

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// pullerCache holds the registry clients of the store, one per set of
// credentials, with what every one of them authenticates and dials with.
type pullerCache struct {
	keychain  authn.Keychain
	docker    string // Docker config.json path, "" for none
	transport http.RoundTripper

	mu sync.Mutex
	m  map[string]*remote.Puller
}

// get returns a registry client for these credentials, reused across
// calls so that a warm resolve costs one manifest round trip (the token
// exchange and the /v2/ ping are cached by ggcr per repository).
func (c *pullerCache) get(creds []Credential) (*remote.Puller, error) {
	h := sha256.New()
	for _, cr := range creds {
		if err := cr.validate(); err != nil {
			return nil, err
		}
		fmt.Fprintf(h, "%q %q %q %q\n", cr.Registry, cr.Username, cr.Password, cr.Token)
	}
	key := hex.EncodeToString(h.Sum(nil))
	c.mu.Lock()
	defer c.mu.Unlock()
	if p, ok := c.m[key]; ok {
		return p, nil
	}
	if len(c.m) > 64 { // many distinct workspace credentials: start over
		c.m = map[string]*remote.Puller{}
	}
	p, err := remote.NewPuller(
		remote.WithAuthFromKeychain(keychain{creds: creds, platform: c.keychain, configPath: c.docker}),
		remote.WithTransport(c.transport),
		remote.WithUserAgent("gauntlet"),
	)
	if err != nil {
		return nil, err
	}
	c.m[key] = p
	return p, nil
}
