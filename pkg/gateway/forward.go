package gateway

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"sync"
	"time"
)

// Forward relays each connection accepted on ln (a loopback port inside the
// sandbox's own network namespace) to the gateway's unix socket at
// socketPath (bound into the sandbox), byte for byte, until ctx ends. It
// carries HTTP without reading it, so streamed answers pass as they come.
// The sandbox needs no network for it: under network_mode no-network the
// namespace has only lo, which is all Forward listens on.
func Forward(ctx context.Context, ln net.Listener, socketPath string) error {
	var wg sync.WaitGroup
	stop := context.AfterFunc(ctx, func() { ln.Close() })
	defer stop()
	conns := map[net.Conn]bool{}
	var mu sync.Mutex
	defer func() {
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				continue
			}
			return fmt.Errorf("gateway forwarder: accept: %w", err)
		}
		mu.Lock()
		conns[c] = true
		mu.Unlock()
		wg.Add(1)
		go func() {
			defer wg.Done()
			relay(c, socketPath)
			mu.Lock()
			delete(conns, c)
			mu.Unlock()
		}()
	}
}

func relay(c net.Conn, socketPath string) {
	defer c.Close()
	up, err := net.DialTimeout("unix", socketPath, 10*time.Second)
	if err != nil {
		// The harness sees a closed connection, as from a gateway that is
		// down; the runner learns it from the gateway's own state.
		return
	}
	defer up.Close()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		if cw, ok := dst.(interface{ CloseWrite() error }); ok {
			_ = cw.CloseWrite()
		}
		done <- struct{}{}
	}
	go pipe(up, c)
	go pipe(c, up)
	<-done
	<-done
}

// ForwardMain is the forwarder as a command, for the runner binary to exec
// inside the sandbox:
//
//	gateway-forward -listen 127.0.0.1:PORT -socket /run/gauntlet/gateway.sock
//
// It prints "listening on ADDR" once it accepts connections and runs until
// ctx ends (the sandbox's end). Exit codes: 0, 1 failure, 2 usage.
func ForwardMain(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("gateway-forward", flag.ContinueOnError)
	fs.SetOutput(stderr)
	listen := fs.String("listen", "127.0.0.1:0", "loopback address to accept harness connections on")
	socket := fs.String("socket", "", "the gateway's unix socket")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if *socket == "" || fs.NArg() > 0 {
		fmt.Fprintln(stderr, "usage: gateway-forward -listen 127.0.0.1:PORT -socket PATH")
		return 2
	}
	ln, err := net.Listen("tcp", *listen)
	if err != nil {
		fmt.Fprintf(stderr, "gateway-forward: %v\n", err)
		return 1
	}
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	if err := Forward(ctx, ln, *socket); err != nil {
		fmt.Fprintf(stderr, "gateway-forward: %v\n", err)
		return 1
	}
	return 0
}
