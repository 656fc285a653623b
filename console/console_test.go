package console

import (
	"bufio"
	"crypto/ed25519"
	"crypto/rand"
	"encoding/json"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/ssh"

	"github.com/primerhq/primer/backend/container"
	"github.com/primerhq/primer/backend/kubernetes"
	"github.com/primerhq/primer/backend/local"
	"github.com/primerhq/primer/backend/vm"
)

// TestProviderConfigParses fills the New provider form for each type as a
// person would and checks the backend accepts the document it makes.
func TestProviderConfigParses(t *testing.T) {
	knownHosts := t.TempDir() + "/known_hosts"
	if err := os.WriteFile(knownHosts, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	_, priv, _ := ed25519.GenerateKey(rand.Reader)
	block, err := ssh.MarshalPrivateKey(priv, "")
	if err != nil {
		t.Fatal(err)
	}
	keyFile := t.TempDir() + "/id_ed25519"
	if err := os.WriteFile(keyFile, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		typ   string
		form  url.Values
		parse func(json.RawMessage) error
		want  string
	}{
		{"container", url.Values{"runtime": {"docker"}, "connection": {"socket"}, "socket_path": {"/var/run/docker.sock"}, "reachability": {"host_port"}, "bind_host": {"127.0.0.1"}},
			func(d json.RawMessage) error { _, err := container.ParseProviderConfig(d); return err }, `"socket_path":"/var/run/docker.sock"`},
		{"container", url.Values{"runtime": {"podman"}, "connection": {"tcp"}, "tcp_host": {"tcp://10.0.0.2:2376"}, "tls_ca_file": {"/ca.pem"}, "tls_cert_file": {"/c.pem"}, "tls_key_file": {"/k.pem"}, "reachability": {"network"}, "network": {"primer"}},
			func(d json.RawMessage) error { _, err := container.ParseProviderConfig(d); return err }, `"ca_file":"/ca.pem"`},
		{"kubernetes", url.Values{"k8s_connection": {"in_cluster"}, "namespace": {"sandboxes"}, "k8s_reachability": {"pod_ip"}},
			func(d json.RawMessage) error { _, err := kubernetes.ParseProviderConfig(d); return err }, `"namespace":"sandboxes"`},
		{"kubernetes", url.Values{"k8s_connection": {"kubeconfig"}, "kubeconfig": {"/etc/kube.conf"}, "k8s_reachability": {"port_forward"}},
			func(d json.RawMessage) error { _, err := kubernetes.ParseProviderConfig(d); return err }, `"path":"/etc/kube.conf"`},
		{"local", url.Values{"root_path": {"/srv/ws"}},
			func(d json.RawMessage) error { _, err := local.ParseProviderConfig(d, "local"); return err }, `"root_path":"/srv/ws"`},
		{"worktree", url.Values{"root_path": {"/srv/wt"}},
			func(d json.RawMessage) error { _, err := local.ParseProviderConfig(d, "worktree"); return err }, `"kind":"worktree"`},
		{"vm", url.Values{"vm_user": {"primer"}, "vm_port": {"2222"}, "vm_key_file": {keyFile}, "vm_known_hosts": {knownHosts}, "vm_hosts": {"10.0.0.5\n10.0.0.6:2200"}},
			func(d json.RawMessage) error { _, err := vm.ParseProviderConfig(d); return err }, `{"address":"10.0.0.6:2200"}`},
	}
	for _, tc := range cases {
		t.Run(tc.typ, func(t *testing.T) {
			r := httptest.NewRequest(http.MethodPost, "/providers", strings.NewReader(tc.form.Encode()))
			r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			doc, err := providerConfig(r, tc.typ)
			if err != nil {
				t.Fatal(err)
			}
			if err := tc.parse(doc); err != nil {
				t.Fatalf("backend refuses %s: %v", doc, err)
			}
			if !strings.Contains(string(doc), tc.want) {
				t.Errorf("config %s lacks %s", doc, tc.want)
			}
		})
	}
}

func TestSameOrigin(t *testing.T) {
	cases := []struct {
		origin, fetchSite string
		want              bool
	}{
		{"", "", true}, // a non-browser client: the CSRF token decides
		{"http://console.test", "same-origin", true},     // the console's own form
		{"http://console.test", "", true},                // an older browser
		{"http://evil.test", "", false},                  // another origin
		{"http://console.test:8081", "same-site", false}, // another port is another origin
		{"", "cross-site", false},
		{"null", "", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest(http.MethodPost, "http://console.test/workspaces", nil)
		if tc.origin != "" {
			r.Header.Set("Origin", tc.origin)
		}
		if tc.fetchSite != "" {
			r.Header.Set("Sec-Fetch-Site", tc.fetchSite)
		}
		if got := sameOrigin(r); got != tc.want {
			t.Errorf("Origin %q Sec-Fetch-Site %q: sameOrigin = %v, want %v", tc.origin, tc.fetchSite, got, tc.want)
		}
	}
}

// TestInprocStreams checks the in-process transport hands over what the
// handler flushed while the handler is still running: the live pages and
// the exec output depend on it.
func TestInprocStreams(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.RemoteAddr != "192.0.2.7:4321" {
			t.Errorf("RemoteAddr = %q, want the browser's", r.RemoteAddr)
		}
		if got := r.Header.Values("X-Forwarded-For"); len(got) != 2 || got[0] != "198.51.100.1" || got[1] != "192.0.2.9" {
			t.Errorf("X-Forwarded-For = %q, want the browser request's lines, in order", got)
		}
		w.Header().Set("X-Test", "1")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write([]byte("first\n"))
		w.(http.Flusher).Flush()
		<-release
		_, _ = w.Write([]byte("second\n"))
	})
	hc := &http.Client{Transport: inproc{h: h}}
	browser := httptest.NewRequest(http.MethodGet, "/live/workspaces", nil)
	browser.RemoteAddr = "192.0.2.7:4321"
	browser.Header.Add("X-Forwarded-For", "198.51.100.1")
	browser.Header.Add("X-Forwarded-For", "192.0.2.9")
	req, _ := http.NewRequestWithContext(withRemote(t.Context(), browser), http.MethodGet, "http://x/stream", nil)
	// A forwarding header of the console's own request is never passed on.
	req.Header.Set("X-Forwarded-For", "203.0.113.66")
	resp, err := hc.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusAccepted || resp.Header.Get("X-Test") != "1" {
		t.Fatalf("response = %d %v", resp.StatusCode, resp.Header)
	}
	br := bufio.NewReader(resp.Body)
	got := make(chan string, 1)
	go func() { l, _ := br.ReadString('\n'); got <- l }()
	select {
	case l := <-got:
		if l != "first\n" {
			t.Fatalf("first line = %q", l)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the flushed line did not arrive while the handler ran")
	}
	close(release)
	if l, _ := br.ReadString('\n'); l != "second\n" {
		t.Fatalf("second line = %q", l)
	}
}
