package registry

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"strings"
	"sync"
	"syscall"
	"time"
)

// ErrAddressRefused is wrapped by errors about a fetch to an address the
// policy does not allow (loopback, private, link-local, …).
var ErrAddressRefused = errors.New("address refused")

// AllowOption names the operator's switch in refusals.
const AllowOption = "allow private networks for registry fetches (gauntlet local --allow-private-registry)"

// refusedAddr reports why ip may not be reached by a registry or git fetch
// under the default policy, or "".
func refusedAddr(ip netip.Addr) string {
	ip = ip.Unmap()
	switch {
	case ip.IsLoopback():
		return "loopback"
	case ip.IsPrivate():
		return "private"
	case ip.IsLinkLocalUnicast(), ip.IsLinkLocalMulticast():
		return "link-local"
	case ip.IsUnspecified():
		return "unspecified"
	case ip.IsMulticast(), ip.IsInterfaceLocalMulticast():
		return "multicast"
	case cgnat.Contains(ip):
		return "shared (carrier-grade NAT)"
	}
	return ""
}

var cgnat = netip.MustParsePrefix("100.64.0.0/10")

// guardedDialer is a dialer that checks the address it is about to
// connect to — after DNS resolution, in the socket's Control hook — so a
// name that resolves to a public address when checked and to 127.0.0.1 when
// dialled (DNS rebinding) is refused all the same.
func guardedDialer(refuse func(netip.Addr) string) *net.Dialer {
	if refuse == nil {
		refuse = refusedAddr
	}
	return &net.Dialer{
		Timeout: 30 * time.Second,
		Control: func(network, address string, _ syscall.RawConn) error {
			ap, err := netip.ParseAddrPort(address)
			if err != nil {
				return fmt.Errorf("%w: cannot parse %q", ErrAddressRefused, address)
			}
			if why := refuse(ap.Addr()); why != "" {
				return fmt.Errorf("%w: %s is a %s address; registry and git fetches reach public addresses only unless the operator chooses to %s",
					ErrAddressRefused, ap.Addr(), why, AllowOption)
			}
			return nil
		},
	}
}

// guardedClient is an HTTP client whose every connection goes through
// guardedDialer. Environment proxies are ignored: a proxy on loopback
// would carry the request past the check.
func guardedClient(timeout time.Duration, refuse func(netip.Addr) string) *http.Client {
	return &http.Client{
		Timeout: timeout,
		Transport: &http.Transport{
			Proxy:                 nil,
			DialContext:           guardedDialer(refuse).DialContext,
			TLSHandshakeTimeout:   15 * time.Second,
			ResponseHeaderTimeout: timeout,
			MaxIdleConns:          4,
			IdleConnTimeout:       30 * time.Second,
		},
	}
}

// fetchProxy is an HTTP proxy on loopback that git is pointed at
// (http.proxy), so git's HTTP(S) connections are made by guardedDialer: it
// tunnels CONNECT (https) and forwards absolute-URI requests (http).
type fetchProxy struct {
	ln      net.Listener
	srv     *http.Server
	dialer  *net.Dialer
	forward *httputil.ReverseProxy

	mu      sync.Mutex
	refused error // the last refusal, reported instead of git's own words
}

func startFetchProxy(refuse func(netip.Addr) string) (*fetchProxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("start the git fetch proxy: %w", err)
	}
	p := &fetchProxy{ln: ln, dialer: guardedDialer(refuse)}
	// Plain http:// requests arrive in absolute form; ReverseProxy sends
	// them on over the guarded transport unchanged.
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL = pr.In.URL
			pr.Out.Host = pr.In.Host
			pr.Out.Header.Del("Proxy-Authorization")
		},
		Transport: guardedClient(0, refuse).Transport,
		ErrorHandler: func(w http.ResponseWriter, r *http.Request, err error) {
			status := http.StatusBadGateway
			if errors.Is(err, ErrAddressRefused) {
				status = http.StatusForbidden
				p.record(fmt.Errorf("fetch from %s: %w", r.URL.Host, err))
			}
			http.Error(w, err.Error(), status)
		},
	}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	go func() { _ = p.srv.Serve(ln) }()
	return p, nil
}

// URL is the proxy's http:// URL.
func (p *fetchProxy) URL() string { return "http://" + p.ln.Addr().String() }

func (p *fetchProxy) close() error { return p.srv.Close() }

func (p *fetchProxy) record(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refused = err
}

// lastRefusal returns and clears the last refusal.
func (p *fetchProxy) lastRefusal() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	err := p.refused
	p.refused = nil
	return err
}

func (p *fetchProxy) dial(ctx context.Context, w http.ResponseWriter, hostport string) (net.Conn, bool) {
	conn, err := p.dialer.DialContext(ctx, "tcp", hostport)
	if err != nil {
		status := http.StatusBadGateway
		if errors.Is(err, ErrAddressRefused) {
			status = http.StatusForbidden
			p.record(fmt.Errorf("fetch from %s: %w", hostport, err))
		}
		http.Error(w, err.Error(), status)
		return nil, false
	}
	return conn, true
}

func (p *fetchProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method == http.MethodConnect {
		p.tunnel(w, r)
		return
	}
	if r.URL.Scheme != "http" || r.URL.Host == "" {
		http.Error(w, "only absolute http:// requests and CONNECT", http.StatusBadRequest)
		return
	}
	p.forward.ServeHTTP(w, r)
}

func (p *fetchProxy) tunnel(w http.ResponseWriter, r *http.Request) {
	upstream, ok := p.dial(r.Context(), w, r.Host)
	if !ok {
		return
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		upstream.Close()
		http.Error(w, "proxy cannot hijack", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		upstream.Close()
		return
	}
	if _, err := client.Write([]byte("HTTP/1.1 200 Connection established\r\n\r\n")); err != nil {
		client.Close()
		upstream.Close()
		return
	}
	done := make(chan struct{}, 2)
	go func() {
		if n := buf.Reader.Buffered(); n > 0 {
			b, _ := buf.Reader.Peek(n)
			_, _ = upstream.Write(b)
		}
		_, _ = io.Copy(upstream, client)
		closeWrite(upstream)
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		closeWrite(client)
		done <- struct{}{}
	}()
	<-done
	<-done
	client.Close()
	upstream.Close()
}

func closeWrite(c net.Conn) {
	if tc, ok := c.(interface{ CloseWrite() error }); ok {
		_ = tc.CloseWrite()
	}
}

// guardedGitProtocols are the transports git may use under the default
// policy: only HTTP(S), whose connections the fetch proxy checks. file://
// reads the server's own disk, ssh:// and git:// connect where no check can
// be made.
const guardedGitProtocols = "https:http"

// isProxyEnv reports whether an environment entry would steer git's or
// curl's connections (and so must not reach a guarded git).
func isProxyEnv(kv string) bool {
	name, _, _ := strings.Cut(kv, "=")
	switch strings.ToLower(name) {
	case "http_proxy", "https_proxy", "all_proxy", "no_proxy", "git_proxy_command", "git_ssh_command", "git_ssh", "git_config_parameters":
		return true
	}
	return false
}
