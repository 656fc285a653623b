package vm_test

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
)

// sshServer is an in-process SSH server that records every authentication
// attempt (the "none" probe included) and every channel opened: what a
// client sent beyond the key exchange.
type sshServer struct {
	addr string
	key  ssh.PublicKey

	mu       sync.Mutex
	auths    []string // "user method" per attempt
	channels int
	done     sync.WaitGroup
}

func startSSHServer(t *testing.T) *sshServer {
	t.Helper()
	_, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	hostKey, err := ssh.NewSignerFromKey(priv)
	if err != nil {
		t.Fatal(err)
	}
	_, clientKey := vmtest.KeyPair(t)
	s := &sshServer{key: hostKey.PublicKey()}
	config := &ssh.ServerConfig{
		PublicKeyCallback: func(_ ssh.ConnMetadata, k ssh.PublicKey) (*ssh.Permissions, error) {
			if string(k.Marshal()) == string(clientKey.Marshal()) {
				return nil, nil
			}
			return nil, errors.New("unknown key")
		},
		AuthLogCallback: func(m ssh.ConnMetadata, method string, _ error) {
			s.mu.Lock()
			s.auths = append(s.auths, m.User()+" "+method)
			s.mu.Unlock()
		},
	}
	config.AddHostKey(hostKey)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s.addr = l.Addr().String()
	t.Cleanup(func() { _ = l.Close(); s.done.Wait() })
	s.done.Add(1)
	go func() {
		defer s.done.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.done.Add(1)
			go func() {
				defer s.done.Done()
				defer func() { _ = c.Close() }()
				sc, chans, reqs, err := ssh.NewServerConn(c, config)
				if err != nil {
					return
				}
				defer func() { _ = sc.Close() }()
				go ssh.DiscardRequests(reqs)
				for ch := range chans {
					s.mu.Lock()
					s.channels++
					s.mu.Unlock()
					_ = ch.Reject(ssh.Prohibited, "test server")
				}
			}()
		}
	}()
	return s
}

func (s *sshServer) seen() (auths []string, channels int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.auths...), s.channels
}

// TestRefusedHostKeySendsNothing shows the host key is checked in the key
// exchange: a refused host never sees the user name, a key or a request.
// The accepted cases show the server does record what a client sends.
func TestRefusedHostKeySendsNothing(t *testing.T) {
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(otherPub)
	tests := []struct {
		name      string
		known     func(s *sshServer) string // known_hosts content
		tofu      bool
		refused   bool
		changed   bool
		wantAuths bool
	}{
		{"known", func(s *sshServer) string { return knownLine(s.addr, s.key) }, false, false, false, true},
		{"changed", func(s *sshServer) string { return knownLine(s.addr, other) }, false, true, true, false},
		{"changed with trust on first use", func(s *sshServer) string { return knownLine(s.addr, other) }, true, true, true, false},
		{"unknown", func(*sshServer) string { return "" }, false, true, false, false},
		{"unknown with trust on first use", func(*sshServer) string { return "" }, true, false, false, true},
		{"another host's key", func(*sshServer) string { return knownLine("127.0.0.1:1", other) }, false, true, false, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSSHServer(t)
			kh := filepath.Join(t.TempDir(), "known_hosts")
			if err := os.WriteFile(kh, []byte(tt.known(s)), 0o600); err != nil {
				t.Fatal(err)
			}
			d := sshDialer(t, vm.Connection{User: "alice", PrivateKeyFile: vmtest.KeyFile(t), KnownHosts: kh, TrustOnFirstUse: tt.tofu})
			c, err := d.Client(sshCtx(t), s.addr)
			var hk *vm.HostKeyError
			switch {
			case tt.refused && (!errors.As(err, &hk) || hk.Changed != tt.changed):
				t.Fatalf("Client = %v; want a *HostKeyError with Changed %v", err, tt.changed)
			case !tt.refused && err != nil:
				t.Fatalf("Client: %v", err)
			case !tt.refused:
				// The test server rejects every channel: the command reaches it.
				if _, _, _, err := c.Run(sshCtx(t), "true", nil); err == nil {
					t.Errorf("Run on the test server succeeded; it rejects sessions")
				}
			}
			_ = d.Close()
			auths, channels := s.seen()
			if tt.wantAuths != (len(auths) > 0) {
				t.Errorf("server saw authentication attempts %q; want some: %v", auths, tt.wantAuths)
			}
			if tt.refused && channels != 0 {
				t.Errorf("server saw %d channels from a refused client", channels)
			}
			if tt.wantAuths && !strings.HasPrefix(auths[0], "alice ") {
				t.Errorf("server saw %q; want user alice", auths)
			}
			if !tt.refused && channels == 0 {
				t.Errorf("server saw no channel from an accepted client")
			}
		})
	}
}

func knownLine(addr string, key ssh.PublicKey) string {
	return knownhosts.Line([]string{knownhosts.Normalize(addr)}, key) + "\n"
}

// TestInlineCredentials: a connection given its key and host keys as
// values (a member's inline credentials) authenticates with that key and
// checks host keys against those lines: a host they do not name, or name
// with another key, is refused in the key exchange, and its error names
// known_hosts_data, never a file.
func TestInlineCredentials(t *testing.T) {
	pem, err := os.ReadFile(vmtest.KeyFile(t))
	if err != nil {
		t.Fatal(err)
	}
	otherPub, _, _ := ed25519.GenerateKey(rand.Reader)
	other, _ := ssh.NewPublicKey(otherPub)
	tests := []struct {
		name    string
		known   func(s *sshServer) string
		refused bool
	}{
		{"known", func(s *sshServer) string { return knownLine(s.addr, s.key) }, false},
		{"changed", func(s *sshServer) string { return knownLine(s.addr, other) }, true},
		{"another host's key", func(*sshServer) string { return knownLine("127.0.0.1:1", other) }, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := startSSHServer(t)
			d := sshDialer(t, vm.Connection{User: "alice", PrivateKey: string(pem), KnownHostsData: tt.known(s)})
			_, err := d.Client(sshCtx(t), s.addr)
			var hk *vm.HostKeyError
			switch {
			case tt.refused && (!errors.As(err, &hk) || hk.KnownHosts != "known_hosts_data"):
				t.Fatalf("Client = %v; want a *HostKeyError naming known_hosts_data", err)
			case !tt.refused && err != nil:
				t.Fatalf("Client: %v", err)
			}
			_ = d.Close()
			auths, _ := s.seen()
			if tt.refused != (len(auths) == 0) {
				t.Errorf("server saw authentication attempts %q; refused %v", auths, tt.refused)
			}
			if !tt.refused && !slices.Contains(auths, "alice publickey") {
				t.Errorf("server saw %q; want alice's key", auths)
			}
		})
	}
}
