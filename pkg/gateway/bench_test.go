package gateway_test

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/gauntlet-bench/gauntlet/pkg/gateway"
	"github.com/gauntlet-bench/gauntlet/pkg/modelmock"
)

// benchTarget is one way for a harness to reach the mock model.
type benchTarget struct {
	name   string
	base   string
	client *http.Client
	token  string
}

// benchTargets starts the mock and the three paths to it: direct (no
// gateway), the gateway's unix socket, and the in-sandbox path (loopback
// forwarder → socket → gateway), with the record written as in an attempt.
func benchTargets(b *testing.B) []benchTarget {
	mock := modelmock.NewServer(modelmock.DefaultScript())
	b.Cleanup(mock.Close)
	transport := func() *http.Transport {
		return &http.Transport{MaxIdleConnsPerHost: 100}
	}
	g, err := gateway.Start(context.Background(), gateway.Config{
		Route: mockRoute(mock.URL, "gpt-5", "openai"), Key: realKey,
		RecordPath: filepath.Join(b.TempDir(), "calls.jsonl"),
		Transport:  transport(),
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	b.Cleanup(cancel)
	go gateway.Forward(ctx, ln, g.SocketPath())
	sock := transport()
	sock.DialContext = func(ctx context.Context, _, _ string) (net.Conn, error) {
		return (&net.Dialer{}).DialContext(ctx, "unix", g.SocketPath())
	}
	return []benchTarget{
		{"direct", mock.URL, &http.Client{Transport: transport()}, realKey},
		{"gateway-socket", "http://gateway", &http.Client{Transport: sock}, g.Token()},
		{"gateway-forwarder", "http://" + ln.Addr().String(), &http.Client{Transport: transport()}, g.Token()},
	}
}

// benchCall is codex's first recorded request (40 kB) with its streamed
// answer read to the end.
func benchCall(b *testing.B, t benchTarget, body []byte) time.Duration {
	start := time.Now()
	req, _ := http.NewRequest(http.MethodPost, t.base+"/v1/responses", bytes.NewReader(body))
	req.Header.Set("Authorization", "Bearer "+t.token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := t.client.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || n == 0 {
		b.Fatalf("%s: status %d, %d bytes", t.name, resp.StatusCode, n)
	}
	return time.Since(start)
}

// BenchmarkStreamedCall: one streamed Responses call at a time, the mock
// answering at once; p50/p99 per path (the gateway's added latency is the
// difference from direct).
func BenchmarkStreamedCall(b *testing.B) {
	body := benchBody(b)
	for _, t := range benchTargets(b) {
		b.Run(t.name, func(b *testing.B) {
			for range 20 { // warm connections
				benchCall(b, t, body)
			}
			lat := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				lat = append(lat, benchCall(b, t, body))
			}
			b.StopTimer()
			reportPercentiles(b, lat)
		})
	}
}

// BenchmarkConcurrentStreams: 50 harnesses streaming at once; calls/s.
func BenchmarkConcurrentStreams(b *testing.B) {
	body := benchBody(b)
	for _, t := range benchTargets(b) {
		b.Run(t.name, func(b *testing.B) {
			const streams = 50
			for range streams {
				benchCall(b, t, body)
			}
			var mu sync.Mutex
			var lat []time.Duration
			work := make(chan struct{}, b.N)
			for range b.N {
				work <- struct{}{}
			}
			close(work)
			b.ResetTimer()
			start := time.Now()
			var wg sync.WaitGroup
			for range streams {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var mine []time.Duration
					for range work {
						mine = append(mine, benchCall(b, t, body))
					}
					mu.Lock()
					lat = append(lat, mine...)
					mu.Unlock()
				}()
			}
			wg.Wait()
			b.StopTimer()
			b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "calls/s")
			reportPercentiles(b, lat)
		})
	}
}

func benchBody(b *testing.B) []byte {
	f := loadFixture(&testing.T{}, "codex/0003-ok-POST.json")
	if len(f.Body) == 0 {
		b.Fatal("no fixture body")
	}
	return f.Body
}

func reportPercentiles(b *testing.B, lat []time.Duration) {
	if len(lat) == 0 {
		return
	}
	slices.Sort(lat)
	at := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) }
	b.ReportMetric(at(0.50), "p50-µs")
	b.ReportMetric(at(0.99), "p99-µs")
	b.ReportMetric(0, "ns/op")
}
