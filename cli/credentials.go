package cli

import (
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/primerhq/primer/api/client"
)

// token returns the API key primectl sends: --token, else PRIMER_TOKEN,
// else, for a server on this machine only, the admin key `primer serve`
// wrote into its data directory (PRIMER_DATA_DIR, a .data directory in the
// working directory or one above it, or the default data directory). A key
// found on disk is never sent to another machine.
func (a *app) token() string {
	if a.tokenFlag != "" {
		return a.tokenFlag
	}
	if t := strings.TrimSpace(os.Getenv("PRIMER_TOKEN")); t != "" {
		return t
	}
	if !loopback(a.url) {
		return ""
	}
	for _, p := range adminKeyPaths() {
		if data, err := os.ReadFile(p); err == nil {
			if k := strings.TrimSpace(string(data)); k != "" {
				return k
			}
		}
	}
	return ""
}

// adminKeyPaths lists where a local `primer serve` may have written its
// admin key, most specific first.
func adminKeyPaths() []string {
	var paths []string
	if d := os.Getenv("PRIMER_DATA_DIR"); d != "" {
		paths = append(paths, filepath.Join(d, client.AdminKeyFile))
	}
	if wd, err := os.Getwd(); err == nil {
		for dir := wd; ; dir = filepath.Dir(dir) {
			paths = append(paths, filepath.Join(dir, ".data", client.AdminKeyFile))
			if filepath.Dir(dir) == dir {
				break
			}
		}
	}
	if d := os.Getenv("XDG_DATA_HOME"); d != "" {
		paths = append(paths, filepath.Join(d, "primer", client.AdminKeyFile))
	} else if home, err := os.UserHomeDir(); err == nil {
		paths = append(paths, filepath.Join(home, ".local", "share", "primer", client.AdminKeyFile))
	}
	return paths
}

// loopback reports whether raw names a server on this machine.
func loopback(raw string) bool {
	if !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	host := u.Hostname()
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
