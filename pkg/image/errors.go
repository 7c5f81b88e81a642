package image

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"syscall"

	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
)

// Error classes. Every error the store returns wraps one of them (test with
// errors.Is) inside an *Error that names the image.
var (
	// ErrInvalidReference: the reference does not parse, or a setting is malformed.
	ErrInvalidReference = errors.New("invalid image reference")
	// ErrNotFound: no endpoint knows the image (unknown repository, tag or digest).
	ErrNotFound = errors.New("image not found")
	// ErrUnreachable: no endpoint could be reached (connection refused, DNS, TLS, timeout).
	ErrUnreachable = errors.New("registry unreachable")
	// ErrUnauthorized: the registry refused the credentials (or asked for some and had none).
	ErrUnauthorized = errors.New("registry refused authentication")
	// ErrPlatform: the image has no linux/amd64 manifest.
	ErrPlatform = errors.New("no linux/amd64 image")
	// ErrCorrupt: a blob's bytes do not match its digest or size, or a layer is
	// not a readable tar stream (truncated, bad compression).
	ErrCorrupt = errors.New("corrupt image content")
	// ErrUnsafeLayer: a layer entry would escape the rootfs (absolute or `..` path)
	// or is of a kind the store refuses.
	ErrUnsafeLayer = errors.New("unsafe layer entry")
	// ErrNotCached: CachedRootfs found no unpacked rootfs for the image.
	ErrNotCached = errors.New("image not in the local cache")
)

// Error is what the store returns: the image it was working on and the cause.
type Error struct {
	Image string // the reference as the caller gave it
	Err   error  // the cause; wraps one of the Err* classes
}

func (e *Error) Error() string { return fmt.Sprintf("image %s: %v", e.Image, e.Err) }

// Unwrap returns the cause.
func (e *Error) Unwrap() error { return e.Err }

func imageErr(image string, err error) error {
	if err == nil {
		return nil
	}
	var ie *Error
	if errors.As(err, &ie) {
		return err
	}
	return &Error{Image: image, Err: err}
}

// classify maps a registry client error to one of the error classes, keeping
// the original text (it says which endpoint and what the registry answered).
func classify(err error) error {
	if err == nil {
		return nil
	}
	for _, c := range []error{ErrNotFound, ErrUnreachable, ErrUnauthorized, ErrPlatform, ErrCorrupt, ErrInvalidReference} {
		if errors.Is(err, c) {
			return err
		}
	}
	var te *transport.Error
	if errors.As(err, &te) {
		switch {
		case te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden:
			return fmt.Errorf("%w: %v", ErrUnauthorized, err)
		case te.StatusCode == http.StatusNotFound:
			return fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		for _, d := range te.Errors {
			switch d.Code {
			case transport.UnauthorizedErrorCode, transport.DeniedErrorCode:
				return fmt.Errorf("%w: %v", ErrUnauthorized, err)
			case transport.ManifestUnknownErrorCode, transport.NameUnknownErrorCode, transport.BlobUnknownErrorCode:
				return fmt.Errorf("%w: %v", ErrNotFound, err)
			}
		}
		if te.StatusCode >= 500 {
			return fmt.Errorf("%w: %v", ErrUnreachable, err)
		}
		return err
	}
	var ne net.Error
	var ue *url.Error
	var oe *net.OpError
	if errors.As(err, &oe) || errors.As(err, &ne) || errors.As(err, &ue) || errors.Is(err, syscall.ECONNREFUSED) {
		return fmt.Errorf("%w: %v", ErrUnreachable, err)
	}
	return err
}

// worst picks, among the errors of every endpoint tried, the one that says
// most: refused credentials, then not found, then the first.
func worst(errs []error) error {
	for _, c := range []error{ErrUnauthorized, ErrNotFound, ErrCorrupt, ErrPlatform} {
		for _, e := range errs {
			if errors.Is(e, c) {
				return e
			}
		}
	}
	if len(errs) == 0 {
		return ErrNotFound
	}
	return errs[0]
}
