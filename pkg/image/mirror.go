package image

import (
	"fmt"
	"net"
	"net/url"
	"sort"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// Mirror maps a registry, or a repository prefix within one, to mirror
// endpoints, like containerd's hosts.toml or Docker's registry-mirrors. In the
// platform config it reads
//
//	[[images.mirrors]]
//	prefix = "docker.io"                       # or "docker.io/library", "ghcr.io/org"
//	endpoints = ["https://mirror.example.com/dockerhub", "http://127.0.0.1:5000"]
//	skip_upstream = false
//
// A reference under Prefix is looked up at each endpoint in order, with the
// rest of its repository path appended to the endpoint's path: with the
// setting above, docker.io/library/python:3.13 is asked of
// mirror.example.com as dockerhub/library/python:3.13. When every endpoint
// fails the upstream registry is tried, unless SkipUpstream is set (air-gapped
// sites, and tests, which must never leave loopback). The longest matching
// prefix wins. An endpoint is https, or plain http on a loopback address only.
type Mirror struct {
	Prefix       string   `toml:"prefix" json:"prefix"`
	Endpoints    []string `toml:"endpoints" json:"endpoints"`
	SkipUpstream bool     `toml:"skip_upstream" json:"skip_upstream,omitempty"`
}

// endpoint is one place a repository can be fetched from.
type endpoint struct {
	repo  name.Repository // the repository at that place
	label string          // for errors and Resolved.Source: scheme://host/path
}

// mirrorSet is validated mirror settings, longest prefix first.
type mirrorSet []parsedMirror

type parsedMirror struct {
	prefix    string // canonical: registry host (docker.io for Docker Hub) + optional path
	endpoints []parsedEndpoint
	skip      bool
}

type parsedEndpoint struct {
	host     string
	path     string
	insecure bool // plain http
	label    string
}

// ValidateMirrors checks mirror settings and says which field is wrong.
func ValidateMirrors(ms []Mirror) error {
	_, err := parseMirrors(ms)
	return err
}

func parseMirrors(ms []Mirror) (mirrorSet, error) {
	var out mirrorSet
	seen := map[string]bool{}
	for i, m := range ms {
		field := fmt.Sprintf("mirrors[%d]", i)
		p := canonicalPrefix(m.Prefix)
		if p == "" {
			return nil, fmt.Errorf("%w: %s.prefix is empty: want a registry host, optionally with a repository prefix (docker.io, docker.io/library, ghcr.io/org)", ErrInvalidReference, field)
		}
		if _, err := name.NewRegistry(strings.SplitN(p, "/", 2)[0], name.StrictValidation); err != nil {
			return nil, fmt.Errorf("%w: %s.prefix %q: %v", ErrInvalidReference, field, m.Prefix, err)
		}
		if seen[p] {
			return nil, fmt.Errorf("%w: %s.prefix %q is set twice", ErrInvalidReference, field, m.Prefix)
		}
		seen[p] = true
		if len(m.Endpoints) == 0 {
			return nil, fmt.Errorf("%w: %s.endpoints is empty: want at least one URL", ErrInvalidReference, field)
		}
		pm := parsedMirror{prefix: p, skip: m.SkipUpstream}
		for j, e := range m.Endpoints {
			pe, err := parseEndpoint(e)
			if err != nil {
				return nil, fmt.Errorf("%w: %s.endpoints[%d] %q: %v", ErrInvalidReference, field, j, e, err)
			}
			pm.endpoints = append(pm.endpoints, pe)
		}
		out = append(out, pm)
	}
	sort.SliceStable(out, func(a, b int) bool { return len(out[a].prefix) > len(out[b].prefix) })
	return out, nil
}

func parseEndpoint(s string) (parsedEndpoint, error) {
	u, err := url.Parse(s)
	if err != nil {
		return parsedEndpoint{}, err
	}
	if u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return parsedEndpoint{}, fmt.Errorf("want scheme://host[:port][/path]")
	}
	pe := parsedEndpoint{host: u.Host, path: strings.Trim(u.Path, "/")}
	switch u.Scheme {
	case "https":
	case "http":
		if !isLoopbackHost(u.Hostname()) {
			return parsedEndpoint{}, fmt.Errorf("plain http is allowed for loopback mirrors only (127.0.0.0/8, ::1, localhost); use https")
		}
		pe.insecure = true
	default:
		return parsedEndpoint{}, fmt.Errorf("scheme %q: want https, or http for a loopback mirror", u.Scheme)
	}
	if _, err := name.NewRegistry(pe.host, name.StrictValidation); err != nil {
		return parsedEndpoint{}, err
	}
	pe.label = u.Scheme + "://" + pe.host
	if pe.path != "" {
		pe.label += "/" + pe.path
	}
	return pe, nil
}

func isLoopbackHost(h string) bool {
	if h == "localhost" {
		return true
	}
	ip := net.ParseIP(h)
	return ip != nil && ip.IsLoopback()
}

// canonicalPrefix writes Docker Hub as docker.io and drops slashes at the ends.
func canonicalPrefix(p string) string {
	p = strings.Trim(strings.TrimSpace(p), "/")
	for _, hub := range []string{"index.docker.io", "registry-1.docker.io"} {
		if p == hub || strings.HasPrefix(p, hub+"/") {
			p = "docker.io" + p[len(hub):]
		}
	}
	return p
}

// canonicalRepo is a repository's name as the store writes it: Docker Hub is
// docker.io (ggcr says index.docker.io), official images under library/.
func canonicalRepo(r name.Repository) string {
	reg := r.RegistryStr()
	if reg == name.DefaultRegistry {
		reg = "docker.io"
	}
	return reg + "/" + r.RepositoryStr()
}

// endpoints lists where repo is fetched from, in order.
func (ms mirrorSet) endpoints(repo name.Repository) ([]endpoint, error) {
	full := canonicalRepo(repo)
	var out []endpoint
	skip := false
	for _, m := range ms {
		if full != m.prefix && !strings.HasPrefix(full, m.prefix+"/") {
			continue
		}
		rest := strings.TrimPrefix(strings.TrimPrefix(full, m.prefix), "/")
		for _, e := range m.endpoints {
			path := strings.Trim(e.path+"/"+rest, "/")
			opts := []name.Option{name.WeakValidation}
			if e.insecure {
				opts = append(opts, name.Insecure)
			}
			r, err := name.NewRepository(e.host+"/"+path, opts...)
			if err != nil {
				return nil, fmt.Errorf("%w: mirror %s for %s: %v", ErrInvalidReference, e.label, full, err)
			}
			out = append(out, endpoint{repo: r, label: e.label})
		}
		skip = m.skip
		break
	}
	if !skip {
		out = append(out, endpoint{repo: repo, label: "https://" + repo.RegistryStr()})
	}
	return out, nil
}
