package sandbox

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// The image files of the driver↔runner protocol: the driver resolves a
// slot's pinned images to unpacked layers and hands the runner their
// description (its --image, --verifier-image and --services flags).

// Image is a task environment's unpacked container image: the rootfs the
// phases run in (never written: every attempt gets its own overlay upper)
// and the parts of the image config a runtime applies.
type Image struct {
	// Ref names the image in logs (a digest-pinned reference).
	Ref string `json:"ref,omitempty"`
	// Rootfs is the unpacked root filesystem, one directory; "" when Layers
	// gives it.
	Rootfs string `json:"rootfs,omitempty"`
	// Layers are the image's layer directories, topmost first (the image
	// store's shared layers, with overlayfs whiteouts and opaque markers):
	// the attempt's overlay stacks them as its lower directories. Set
	// either Rootfs or Layers.
	Layers []string `json:"layers,omitempty"`
	// Env is the image config's Env (KEY=VALUE), the base of every phase's
	// environment.
	Env []string `json:"env,omitempty"`
	// WorkingDir is the image config's WorkingDir: the phases' working
	// directory, created if missing; "" = /.
	WorkingDir string `json:"working_dir,omitempty"`
	// User is the image config's User (name, uid, name:group or uid:gid);
	// "" = root.
	User string `json:"user,omitempty"`
	// Entrypoint is the image config's Entrypoint. The main environment's
	// is started as Harbor starts its container, with `sh -c "sleep
	// infinity"` as its arguments; a sidecar service's is its command
	// unless its compose entry sets one.
	Entrypoint []string `json:"entrypoint,omitempty"`
}

// maxImageConfigBytes bounds the image file the driver hands the runner.
const maxImageConfigBytes = 1 << 20

// LoadImage reads an Image written by WriteImage and checks it.
func LoadImage(file string) (Image, error) {
	f, err := os.Open(file)
	if err != nil {
		return Image{}, fmt.Errorf("image config: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImageConfigBytes+1))
	if err != nil {
		return Image{}, fmt.Errorf("image config %s: %w", file, err)
	}
	if len(data) > maxImageConfigBytes {
		return Image{}, fmt.Errorf("image config %s: larger than %d bytes", file, maxImageConfigBytes)
	}
	var img Image
	if err := json.Unmarshal(data, &img); err != nil {
		return Image{}, fmt.Errorf("image config %s: %w", file, err)
	}
	return img, img.Check()
}

// WriteImage writes img for LoadImage (the driver side of --image).
func WriteImage(file string, img Image) error {
	if err := img.Check(); err != nil {
		return err
	}
	data, err := json.Marshal(img)
	if err != nil {
		return fmt.Errorf("encode image config: %w", err)
	}
	return os.WriteFile(file, data, 0o600)
}

// Lowers are the overlay's lower directories, topmost first.
func (img Image) Lowers() []string {
	if len(img.Layers) > 0 {
		return img.Layers
	}
	return []string{img.Rootfs}
}

// maxLayers bounds an image's layer count (overlayfs stacks at most 500
// lower layers).
const maxLayers = 500

// Check reports what makes img unusable: no root or both kinds, a
// relative or missing directory, a relative working directory, a bad
// environment entry.
func (img Image) Check() error {
	switch {
	case img.Rootfs != "" && len(img.Layers) > 0:
		return errors.New("image config: set rootfs or layers, not both")
	case img.Rootfs == "" && len(img.Layers) == 0:
		return errors.New("image config: rootfs or layers is required")
	case len(img.Layers) > maxLayers:
		return fmt.Errorf("image config: %d layers: overlayfs stacks at most %d", len(img.Layers), maxLayers)
	}
	for _, d := range img.Lowers() {
		if !filepath.IsAbs(d) {
			return fmt.Errorf("image config: rootfs/layer %q must be an absolute directory", d)
		}
		if info, err := os.Stat(d); err != nil || !info.IsDir() {
			return fmt.Errorf("image config: rootfs/layer %s is not a directory", d)
		}
	}
	if img.WorkingDir != "" && !filepath.IsAbs(img.WorkingDir) {
		return fmt.Errorf("image config: working_dir %q must be absolute", img.WorkingDir)
	}
	for _, kv := range img.Env {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return fmt.Errorf("image config: env entry %q is not KEY=VALUE", kv)
		}
	}
	return nil
}

// WorkDir is the phases' working directory inside the image.
func (img Image) WorkDir() string {
	if img.WorkingDir == "" {
		return "/"
	}
	return filepath.Clean(img.WorkingDir)
}

// ServiceImage is a sidecar service's unpacked image, which the driver
// resolves from the service's image pinned at sync.
type ServiceImage struct {
	Image
	// Cmd is the image config's: with Entrypoint, the service's command
	// unless its compose entry sets its own.
	Cmd []string `json:"cmd,omitempty"`
}

// LoadServiceImages reads the services' images written by
// WriteServiceImages and checks each.
func LoadServiceImages(file string) (map[string]ServiceImage, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("service images: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxImageConfigBytes+1))
	if err != nil {
		return nil, fmt.Errorf("service images %s: %w", file, err)
	}
	if len(data) > maxImageConfigBytes {
		return nil, fmt.Errorf("service images %s: larger than %d bytes", file, maxImageConfigBytes)
	}
	var imgs map[string]ServiceImage
	if err := json.Unmarshal(data, &imgs); err != nil {
		return nil, fmt.Errorf("service images %s: %w", file, err)
	}
	for name, img := range imgs {
		if err := img.Check(); err != nil {
			return nil, fmt.Errorf("service %s: %w", name, err)
		}
	}
	return imgs, nil
}

// WriteServiceImages writes imgs for LoadServiceImages (the driver side
// of --services).
func WriteServiceImages(file string, imgs map[string]ServiceImage) error {
	for name, img := range imgs {
		if err := img.Check(); err != nil {
			return fmt.Errorf("service %s: %w", name, err)
		}
	}
	data, err := json.Marshal(imgs)
	if err != nil {
		return fmt.Errorf("encode service images: %w", err)
	}
	return os.WriteFile(file, data, 0o600)
}
