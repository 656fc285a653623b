package cli

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"sigs.k8s.io/yaml"

	"github.com/primerhq/primer/api/client"
)

// fileConfig is primectl's config file: YAML with the server's address and
// the API key to send it.
//
//	url: https://primer.example.com
//	token: pmr.key-....
type fileConfig struct {
	URL   string `json:"url"`
	Token string `json:"token"`
}

// configPath is where primectl's config file is: PRIMER_CONFIG, else
// $XDG_CONFIG_HOME/primer/config.yaml, else ~/.config/primer/config.yaml.
func configPath() string {
	if p := os.Getenv("PRIMER_CONFIG"); p != "" {
		return p
	}
	if d := os.Getenv("XDG_CONFIG_HOME"); d != "" {
		return filepath.Join(d, "primer", "config.yaml")
	}
	if home, err := os.UserHomeDir(); err == nil {
		return filepath.Join(home, ".config", "primer", "config.yaml")
	}
	return ""
}

// config reads the config file once per invocation. A missing file is an
// empty config; an unreadable or malformed one is a warning on stderr and
// ignored, and so is a file others may read (it holds a key), which is used
// all the same, as ssh does not: the warning is the fix's reminder.
func (a *app) config() fileConfig {
	if a.cfg != nil {
		return *a.cfg
	}
	a.cfg = &fileConfig{}
	p := configPath()
	if p == "" {
		return *a.cfg
	}
	data, err := os.ReadFile(p)
	if os.IsNotExist(err) {
		return *a.cfg
	}
	if err != nil {
		fmt.Fprintf(a.stderr, "warning: config file %s: %v; ignoring it\n", p, err)
		return *a.cfg
	}
	if fi, err := os.Stat(p); err == nil && fi.Mode().Perm()&0o077 != 0 {
		fmt.Fprintf(a.stderr, "warning: config file %s: mode %04o lets others read the API key in it; run chmod 600 %s\n", p, fi.Mode().Perm(), p)
	}
	var c fileConfig
	if err := yaml.UnmarshalStrict(data, &c); err != nil {
		fmt.Fprintf(a.stderr, "warning: config file %s: %v; ignoring it\n", p, err)
		return *a.cfg
	}
	c.URL, c.Token = strings.TrimSpace(c.URL), strings.TrimSpace(c.Token)
	a.cfg = &c
	return c
}

// serverURL is the API address primectl talks to: --url, else PRIMER_URL,
// else the config file's url, else DefaultURL.
func (a *app) serverURL() string {
	if a.url != "" {
		return a.url
	}
	if u := strings.TrimSpace(os.Getenv("PRIMER_URL")); u != "" {
		return u
	}
	if u := a.config().URL; u != "" {
		return u
	}
	return DefaultURL
}

// token returns the API key primectl sends: --token, else PRIMER_TOKEN,
// else the config file's token, else, for a server on this machine only,
// the admin key `primer serve` wrote into its data directory
// (PRIMER_DATA_DIR, a .data directory in the working directory or one above
// it, or the default data directory). A key found on disk is never sent to
// another machine.
func (a *app) token() string {
	if a.tokenFlag != "" {
		return a.tokenFlag
	}
	if t := strings.TrimSpace(os.Getenv("PRIMER_TOKEN")); t != "" {
		return t
	}
	if t := a.config().Token; t != "" {
		return t
	}
	if !loopback(a.serverURL()) {
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
