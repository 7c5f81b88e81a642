package client

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// Credentials is where the CLI finds the API and its token when neither
// flags nor GAUNTLET_URL / GAUNTLET_TOKEN say.
type Credentials struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// DefaultCredentialsPath is $XDG_CONFIG_HOME/gauntlet/credentials, else
// ~/.config/gauntlet/credentials.
func DefaultCredentialsPath() (string, error) {
	dir := os.Getenv("XDG_CONFIG_HOME")
	if dir == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return "", fmt.Errorf("credentials path: %w", err)
		}
		dir = filepath.Join(home, ".config")
	}
	return filepath.Join(dir, "gauntlet", "credentials"), nil
}

// LoadCredentials reads a credentials file; a missing file gives an error
// wrapping os.ErrNotExist.
func LoadCredentials(path string) (Credentials, error) {
	var c Credentials
	data, err := os.ReadFile(path)
	if err != nil {
		return c, fmt.Errorf("read credentials: %w", err)
	}
	if err := json.Unmarshal(data, &c); err != nil {
		return c, fmt.Errorf("credentials %s: %w", path, err)
	}
	if c.URL == "" || c.Token == "" {
		return c, fmt.Errorf("credentials %s: url and token are required", path)
	}
	return c, nil
}

// SaveCredentials writes a credentials file readable by its owner only,
// atomically.
func SaveCredentials(path string, c Credentials) error {
	if c.URL == "" || c.Token == "" {
		return errors.New("save credentials: url and token are required")
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	data, err := json.MarshalIndent(c, "", "  ")
	if err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".credentials-*")
	if err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := tmp.Chmod(0o600); err != nil {
		tmp.Close()
		return fmt.Errorf("save credentials: %w", err)
	}
	if _, err := tmp.Write(append(data, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("save credentials: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("save credentials: %w", err)
	}
	return nil
}
