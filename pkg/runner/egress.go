package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// EgressProxyPort is where an allowlist phase finds its egress proxy, on
// the sandbox's own loopback; HTTP_PROXY and HTTPS_PROXY point there.
const EgressProxyPort = 3128

// egressProxy is an allowlist phase's only way out: an HTTP proxy (CONNECT
// for TLS and anything else, absolute-form requests for plain HTTP) whose
// listener lives in the sandbox's network namespace — which has only
// loopback — and whose dials leave from the runner's. It forwards only to
// the allowed hosts (exact names, or "*.example.com" for subdomains), and
// never to a loopback, link-local or unspecified address whatever a name
// resolves to, so the sandbox cannot reach the host's loopback through it.
type egressProxy struct {
	allowed []string
	ln      net.Listener
	srv     *http.Server
	wg      sync.WaitGroup
	dialer  *net.Dialer
}

// startEgressProxy listens on 127.0.0.1:EgressProxyPort inside the network
// namespace of pid and serves the allowlist there.
func startEgressProxy(pid int, allowed []string) (*egressProxy, error) {
	ln, err := listenInNetns(pid, fmt.Sprintf("127.0.0.1:%d", EgressProxyPort))
	if err != nil {
		return nil, fmt.Errorf("image sandbox: egress proxy: %w", err)
	}
	p := &egressProxy{allowed: allowed, ln: ln, dialer: &net.Dialer{Timeout: 30 * time.Second, Control: refuseLocal}}
	p.srv = &http.Server{Handler: p, ReadHeaderTimeout: 30 * time.Second}
	p.wg.Go(func() { _ = p.srv.Serve(ln) })
	return p, nil
}

// listenInNetns opens a TCP listener in another process's network
// namespace: a locked thread enters it and listens (the socket stays in
// that namespace), then goes back to its own namespace and is unlocked.
// The thread must not die: Linux sends a child's Pdeathsig when the
// *thread* that forked it exits, and Go retires a thread whose goroutine
// ends locked — a bwrap forked from it (every phase has Pdeathsig SIGKILL)
// would be killed (seen in CI: an allowlist phase's agent "exited -1").
// Where going back is refused (a rootless runner may not re-enter the
// host's namespace), the goroutine parks forever instead, keeping its
// thread alive: a runner lives for one attempt.
func listenInNetns(pid int, addr string) (net.Listener, error) {
	type result struct {
		ln  net.Listener
		err error
	}
	ch := make(chan result, 1)
	go func() {
		runtime.LockOSThread()
		self, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer self.Close()
		ns, err := os.Open(fmt.Sprintf("/proc/%d/ns/net", pid))
		if err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: err}
			return
		}
		defer ns.Close()
		if err := unix.Setns(int(ns.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			ch <- result{err: fmt.Errorf("enter the sandbox's network namespace: %w", err)}
			return
		}
		ln, err := net.Listen("tcp", addr)
		back := unix.Setns(int(self.Fd()), unix.CLONE_NEWNET)
		ch <- result{ln, err}
		if back != nil {
			select {} // in the sandbox's namespace for good: never reused, never exiting
		}
		runtime.UnlockOSThread()
	}()
	r := <-ch
	return r.ln, r.err
}

// refuseLocal is the proxy dialer's check of the resolved address.
func refuseLocal(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return err
	}
	ip := net.ParseIP(host)
	if ip == nil || ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsUnspecified() {
		return fmt.Errorf("egress to %s refused: loopback and link-local addresses are never reachable from a sandbox", host)
	}
	return nil
}

func (p *egressProxy) allows(host string) bool {
	host = strings.ToLower(strings.TrimSuffix(host, "."))
	for _, a := range p.allowed {
		a = strings.ToLower(strings.TrimSuffix(a, "."))
		if suffix, ok := strings.CutPrefix(a, "*."); ok {
			if strings.HasSuffix(host, "."+suffix) {
				return true
			}
			continue
		}
		if host == a {
			return true
		}
	}
	return false
}

func (p *egressProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	target := r.Host
	if r.Method != http.MethodConnect {
		if !r.URL.IsAbs() || r.URL.Scheme != "http" {
			http.Error(w, "egress proxy: only CONNECT and absolute http:// requests", http.StatusBadRequest)
			return
		}
		target = r.URL.Host
	}
	host, port, err := net.SplitHostPort(target)
	if err != nil {
		host, port = target, "80"
	}
	if !p.allows(host) {
		http.Error(w, fmt.Sprintf("egress proxy: %s is not in the task's allowed_hosts", host), http.StatusForbidden)
		return
	}
	upstream, err := p.dialer.DialContext(r.Context(), "tcp", net.JoinHostPort(host, port))
	if err != nil {
		http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
		return
	}
	defer upstream.Close()
	if r.Method != http.MethodConnect {
		r.RequestURI = ""
		r.Header.Del("Proxy-Connection")
		r.Header.Del("Proxy-Authorization")
		if err := r.Write(upstream); err != nil {
			http.Error(w, "egress proxy: "+err.Error(), http.StatusBadGateway)
			return
		}
	}
	hj, ok := w.(http.Hijacker)
	if !ok {
		http.Error(w, "egress proxy: no hijack", http.StatusInternalServerError)
		return
	}
	client, buf, err := hj.Hijack()
	if err != nil {
		return
	}
	defer client.Close()
	if r.Method == http.MethodConnect {
		if _, err := io.WriteString(client, "HTTP/1.1 200 Connection established\r\n\r\n"); err != nil {
			return
		}
	}
	done := make(chan struct{}, 2)
	go func() {
		_, _ = io.Copy(upstream, buf)
		if c, ok := upstream.(*net.TCPConn); ok {
			_ = c.CloseWrite()
		}
		done <- struct{}{}
	}()
	go func() {
		_, _ = io.Copy(client, upstream)
		done <- struct{}{}
	}()
	<-done
}

// stop closes the listener and every connection.
func (p *egressProxy) stop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := p.srv.Shutdown(ctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		_ = p.srv.Close()
	}
	_ = p.srv.Close()
	p.wg.Wait()
}

// proxyEnv are the variables that point an allowlist phase at its proxy.
func proxyEnv() []string {
	url := fmt.Sprintf("http://127.0.0.1:%d", EgressProxyPort)
	return []string{"HTTP_PROXY=" + url, "HTTPS_PROXY=" + url, "http_proxy=" + url, "https_proxy=" + url,
		"NO_PROXY=localhost,127.0.0.1", "no_proxy=localhost,127.0.0.1"}
}
