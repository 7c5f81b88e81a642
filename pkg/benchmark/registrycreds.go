package benchmark

import (
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/gauntlet-bench/gauntlet/pkg/secret"
)

// RegistryCredential gives a benchmark's image pulls a login for one
// container registry: the workspace secret record named Secret holds
// "username:password" (a GitHub PAT as the password for ghcr.io, say), and
// sync sends it to Registry only — the host actually contacted, so an image
// the operator mirrors elsewhere is fetched with the mirror's credentials,
// not this one. Names only; the value never leaves the secret store except
// to authenticate a pull.
type RegistryCredential struct {
	// Registry is host[:port], e.g. "ghcr.io", "registry.example.com:5000";
	// "docker.io" for Docker Hub.
	Registry string `json:"registry"`
	// Secret names a workspace secret record.
	Secret string `json:"secret"`
}

// MaxRegistryCredentials bounds how many registries one benchmark names.
const MaxRegistryCredentials = 16

// FieldError is a problem with one field of a request about a benchmark,
// at a path such as "registry_credentials[0].secret". Messages never carry
// secret values.
type FieldError struct {
	Field   string
	Message string
}

// Error implements error.
func (e *FieldError) Error() string { return e.Field + ": " + e.Message }

// CheckRegistryCredentials checks the shape of each entry (registry is
// host[:port]: no scheme, path or credentials; secret is a secret record
// name; no registry named twice) and returns them with each registry in its
// canonical spelling (lower case; Docker Hub as docker.io). The error is a
// *FieldError naming the first bad field.
func CheckRegistryCredentials(cs []RegistryCredential) ([]RegistryCredential, error) {
	if len(cs) == 0 {
		return nil, nil
	}
	if len(cs) > MaxRegistryCredentials {
		return nil, &FieldError{Field: "registry_credentials", Message: fmt.Sprintf("names %d registries; at most %d are allowed", len(cs), MaxRegistryCredentials)}
	}
	out := make([]RegistryCredential, len(cs))
	seen := map[string]int{}
	for i, c := range cs {
		field := fmt.Sprintf("registry_credentials[%d]", i)
		host, err := CanonicalRegistry(c.Registry)
		if err != nil {
			return nil, &FieldError{Field: field + ".registry", Message: err.Error()}
		}
		if j, dup := seen[host]; dup {
			return nil, &FieldError{Field: field + ".registry", Message: fmt.Sprintf("registry %s is already named by registry_credentials[%d]; name each registry once", host, j)}
		}
		seen[host] = i
		if !secret.ValidName(c.Secret) {
			return nil, &FieldError{Field: field + ".secret", Message: fmt.Sprintf("%q is not a secret record name: want %s, at most 128 bytes", c.Secret, secret.NamePattern)}
		}
		out[i] = RegistryCredential{Registry: host, Secret: c.Secret}
	}
	return out, nil
}

// CanonicalRegistry checks that s is a registry host[:port] and returns it
// lower-cased, with Docker Hub's other names (index.docker.io,
// registry-1.docker.io) written docker.io.
func CanonicalRegistry(s string) (string, error) {
	const want = "want a registry host[:port] such as ghcr.io or registry.example.com:5000"
	switch {
	case s == "":
		return "", fmt.Errorf("is empty; %s", want)
	case len(s) > 255:
		return "", fmt.Errorf("is longer than 255 bytes; %s", want)
	case strings.Contains(s, "://"):
		return "", fmt.Errorf("%q has a scheme; %s (no https://)", s, want)
	case strings.ContainsAny(s, "/?#"):
		return "", fmt.Errorf("%q has a path; %s (credentials apply to the whole registry)", s, want)
	case strings.ContainsAny(s, "@ \t\r\n"):
		return "", fmt.Errorf("%q is not a host; %s (the login goes in the secret record)", s, want)
	}
	host, port := s, ""
	if h, p, err := net.SplitHostPort(s); err == nil {
		host, port = h, p
	} else if strings.Count(s, ":") > 0 && !strings.HasPrefix(s, "[") {
		return "", fmt.Errorf("%q: %s", s, want)
	}
	if port != "" {
		n, err := strconv.Atoi(port)
		if err != nil || n < 1 || n > 65535 {
			return "", fmt.Errorf("%q: port %q is not 1-65535; %s", s, port, want)
		}
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	if ip := net.ParseIP(host); ip == nil && !validHostname(host) {
		return "", fmt.Errorf("%q: %q is not a host name or IP address; %s", s, host, want)
	}
	switch host {
	case "index.docker.io", "registry-1.docker.io":
		host = "docker.io"
	}
	if strings.Contains(host, ":") { // IPv6
		host = "[" + host + "]"
	}
	if port != "" {
		return host + ":" + port, nil
	}
	return host, nil
}

// validHostname reports whether h is a DNS name: dot-separated labels of
// letters, digits and inner dashes.
func validHostname(h string) bool {
	if h == "" || len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(h, ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, c := range label {
			if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
				return false
			}
		}
	}
	return true
}

// ParseRegistryLogin splits a registry credential's secret value,
// "username:password" (split at the first colon; both parts non-empty, no
// line breaks). The error never contains the value.
func ParseRegistryLogin(value string) (username, password string, err error) {
	user, pass, ok := strings.Cut(strings.TrimRight(value, "\r\n"), ":")
	switch {
	case !ok:
		return "", "", fmt.Errorf("the value is not username:password (it has no colon)")
	case user == "":
		return "", "", fmt.Errorf("the value is not username:password (the username before the colon is empty)")
	case pass == "":
		return "", "", fmt.Errorf("the value is not username:password (the password after the colon is empty)")
	case strings.ContainsAny(user, "\r\n") || strings.ContainsAny(pass, "\r\n"):
		return "", "", fmt.Errorf("the value is not username:password (it spans several lines)")
	}
	return user, pass, nil
}
