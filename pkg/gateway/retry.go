package gateway

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"
	"sync/atomic"
	"time"
)

// retrier retries an upstream call that failed in a way a later try may
// not: 429, 5xx (529 is Anthropic's "overloaded"), or no answer at all
// (connection refused or reset). It runs before the harness sees anything,
// so a retry is invisible to it but for the time taken.
type retrier struct {
	base    http.RoundTripper
	tries   int // retries after the first try; negative: none
	backoff time.Duration
}

func (t *retrier) RoundTrip(req *http.Request) (*http.Response, error) {
	st, _ := req.Context().Value(stateKey{}).(*callState)
	var body []byte
	if st != nil {
		body = st.body
	}
	wait := t.backoff
	for try := 0; ; try++ {
		r := req.Clone(req.Context())
		r.Body = io.NopCloser(bytes.NewReader(body))
		r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(body)), nil }
		r.ContentLength = int64(len(body))
		resp, err := t.base.RoundTrip(r)
		if st != nil {
			st.attempts.Store(int32(try + 1))
		}
		if try >= t.tries || !retryable(resp, err) || req.Context().Err() != nil {
			return resp, err
		}
		d := wait
		if resp != nil {
			if ra, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && ra >= 0 && time.Duration(ra)*time.Second <= MaxRetryAfter {
				d = time.Duration(ra) * time.Second
			}
			_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
			resp.Body.Close()
		}
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-req.Context().Done():
			timer.Stop()
			return nil, context.Cause(req.Context())
		}
		wait *= 2
	}
}

func retryable(resp *http.Response, err error) bool {
	if err != nil {
		return true
	}
	switch resp.StatusCode {
	case http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadGateway,
		http.StatusServiceUnavailable, http.StatusGatewayTimeout, 529:
		return true
	}
	return false
}

// attempts counts a call's upstream tries.
type attempts = atomic.Int32

func (st *callState) attemptsDone() int { return int(st.attempts.Load()) }
