package image

import (
	"fmt"
	"os"

	"github.com/BurntSushi/toml"

	"github.com/gauntlet-bench/gauntlet/pkg/tomldoc"
)

// Settings is the operator's image setting as a TOML file:
//
//	docker_config = "/root/.docker/config.json"   # optional
//	max_rootfs_gb = 20                             # optional cap of the whole image storage (layers, blobs, builder)
//
//	[[mirrors]]
//	prefix = "docker.io"
//	endpoints = ["http://127.0.0.1:5000"]
//	skip_upstream = true
type Settings struct {
	DockerConfig string   `toml:"docker_config"`
	MaxRootfsGB  float64  `toml:"max_rootfs_gb"`
	Mirrors      []Mirror `toml:"mirrors"`
}

// LoadSettings reads and checks a settings file; unknown keys are errors.
func LoadSettings(path string) (Settings, error) {
	var st Settings
	data, err := os.ReadFile(path)
	if err != nil {
		return Settings{}, fmt.Errorf("image settings: %w", err)
	}
	md, err := tomldoc.Decode(data, &st)
	if err != nil {
		return Settings{}, fmt.Errorf("image settings %s: %w", path, err)
	}
	if und := md.Undecoded(); len(und) > 0 {
		return Settings{}, fmt.Errorf("image settings %s: unknown key %q (allowed: docker_config, max_rootfs_gb, mirrors.prefix, mirrors.endpoints, mirrors.skip_upstream)", path, und[0].String())
	}
	if err := ValidateMirrors(st.Mirrors); err != nil {
		return Settings{}, fmt.Errorf("image settings %s: %w", path, err)
	}
	if st.MaxRootfsGB < 0 {
		return Settings{}, fmt.Errorf("image settings %s: max_rootfs_gb %v: want 0 (no cap) or more", path, st.MaxRootfsGB)
	}
	return st, nil
}

// Options turns settings into store options.
func (st Settings) Options() Options {
	return Options{Mirrors: st.Mirrors, DockerConfig: st.DockerConfig, MaxRootfsBytes: int64(st.MaxRootfsGB * (1 << 30))}
}

// WriteSettings writes st as TOML (for `gauntlet images serve --write-settings`).
func WriteSettings(path string, st Settings) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := toml.NewEncoder(f).Encode(st); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// DefaultDockerConfig is $DOCKER_CONFIG/config.json, else ~/.docker/config.json.
func DefaultDockerConfig() string {
	if d := os.Getenv("DOCKER_CONFIG"); d != "" {
		return d + "/config.json"
	}
	home, err := os.UserHomeDir()
	if err != nil {
		return ""
	}
	return home + "/.docker/config.json"
}
