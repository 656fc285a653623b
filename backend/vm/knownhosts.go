package vm

import (
	"crypto/ed25519"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"sync"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"
)

// knownHosts verifies host keys against one known_hosts file, and, with
// trust on first use, records the key of a host the file does not name; or
// against known_hosts lines given inline (data), which nothing records to.
type knownHosts struct {
	path string
	data string
	tofu bool

	// mu serialises the recording of keys in this process, so two first
	// connections to one host append one line.
	mu sync.Mutex
}

// callback returns the HostKeyCallback for a connection to addr, read from
// the file now (so keys recorded or edited since are seen), and the host
// key algorithms to ask the server for: those of the keys known for addr,
// so a host known by its ed25519 key is not refused for offering RSA first.
func (h *knownHosts) callback(addr string) (ssh.HostKeyCallback, []string, error) {
	cb, err := h.load()
	if err != nil {
		return nil, nil, err
	}
	algorithms := knownAlgorithms(cb, addr)
	return func(hostname string, remote net.Addr, key ssh.PublicKey) error {
		return h.check(cb, hostname, remote, key)
	}, algorithms, nil
}

// load parses the file. A missing file is empty when trust on first use may
// create it.
func (h *knownHosts) load() (ssh.HostKeyCallback, error) {
	if h.data != "" {
		return inlineKnownHosts(h.data)
	}
	cb, err := knownhosts.New(h.path)
	if err == nil {
		return cb, nil
	}
	if errors.Is(err, fs.ErrNotExist) && h.tofu {
		return func(string, net.Addr, ssh.PublicKey) error {
			return &knownhosts.KeyError{}
		}, nil
	}
	return nil, fmt.Errorf("read known_hosts %s: %w", h.path, err)
}

func (h *knownHosts) check(cb ssh.HostKeyCallback, hostname string, remote net.Addr, key ssh.PublicKey) error {
	err := cb(hostname, remote, key)
	var ke *knownhosts.KeyError
	var re *knownhosts.RevokedError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return &HostKeyError{Addr: hostname, KnownHosts: h.source(), Changed: true}
	case errors.As(err, &ke) && len(ke.Want) > 0:
		return &HostKeyError{Addr: hostname, KnownHosts: h.source(), Changed: true}
	case errors.As(err, &ke) && h.tofu && h.data == "":
		return h.record(hostname, remote, key)
	case errors.As(err, &ke):
		return &HostKeyError{Addr: hostname, KnownHosts: h.source()}
	}
	return err
}

// record appends hostname's key to the file, atomically (a new file renamed
// over the old one). It reads the file again under the lock first: another
// connection may have recorded the host meanwhile, with this key (nothing to
// do) or another one (refused as changed).
func (h *knownHosts) record(hostname string, remote net.Addr, key ssh.PublicKey) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	cb, err := h.load()
	if err != nil {
		return err
	}
	var ke *knownhosts.KeyError
	if err := cb(hostname, remote, key); err == nil {
		return nil
	} else if !errors.As(err, &ke) || len(ke.Want) > 0 {
		return &HostKeyError{Addr: hostname, KnownHosts: h.source(), Changed: true}
	}
	old, err := os.ReadFile(h.path)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("record host key of %s: %w", hostname, err)
	}
	if len(old) > 0 && old[len(old)-1] != '\n' {
		old = append(old, '\n')
	}
	line := knownhosts.Line([]string{knownhosts.Normalize(hostname)}, key) + "\n"
	if err := writeAtomic(h.path, append(old, line...), 0o600); err != nil {
		return fmt.Errorf("record host key of %s in %s: %w", hostname, h.path, err)
	}
	return nil
}

// source names where the keys come from, for messages.
func (h *knownHosts) source() string {
	if h.data != "" {
		return "known_hosts_data"
	}
	return h.path
}

// inlineKnownHosts is the callback of known_hosts lines given as a value.
// The knownhosts package reads only files: the lines reach it through a
// pipe (/dev/fd), so they are never written to the platform's disk.
func inlineKnownHosts(data string) (ssh.HostKeyCallback, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("read known_hosts_data: %w", err)
	}
	defer func() { _ = r.Close() }()
	go func() {
		_, _ = w.WriteString(data)
		_ = w.Close()
	}()
	cb, err := knownhosts.New(fmt.Sprintf("/dev/fd/%d", r.Fd()))
	if err != nil {
		// The package's messages may quote a line: say only which.
		return nil, errors.New("read known_hosts_data: not valid known_hosts lines")
	}
	return cb, nil
}

// checkKnownHostsData checks that data is known_hosts lines holding at
// least one key, without quoting it.
func checkKnownHostsData(data string) error {
	rest := []byte(data)
	keys := 0
	for len(rest) > 0 {
		var err error
		_, _, _, _, rest, err = ssh.ParseKnownHosts(rest)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return errors.New("not valid known_hosts lines (host patterns, key type, base64 key)")
		}
		keys++
	}
	if keys == 0 {
		return errors.New("holds no host key")
	}
	_, err := inlineKnownHosts(data)
	return err
}

// writeAtomic replaces path with data through a temporary file in the same
// directory, so a reader sees the old file or the new one, never a part.
func writeAtomic(path string, data []byte, mode os.FileMode) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer func() { _ = os.Remove(tmp) }()
	if _, err := f.Write(data); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Chmod(mode); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		_ = f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// probeKey is a key no host has, used to ask the known_hosts callback which
// keys it knows for an address (they come back in the KeyError's Want).
var probeKey = sync.OnceValue(func() ssh.PublicKey {
	pub, _, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		panic(err)
	}
	k, err := ssh.NewPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return k
})

// knownAlgorithms returns the host key algorithms of the keys cb knows for
// addr, or, when it knows none, the usual ones with ed25519 first.
func knownAlgorithms(cb ssh.HostKeyCallback, addr string) []string {
	err := cb(addr, &net.TCPAddr{IP: net.IPv4zero, Port: 22}, probeKey())
	var ke *knownhosts.KeyError
	if !errors.As(err, &ke) || len(ke.Want) == 0 {
		// An unknown host (recorded on first use): prefer ed25519, the key
		// type every current sshd has, then the library's other defaults.
		return []string{
			ssh.KeyAlgoED25519,
			ssh.KeyAlgoECDSA256, ssh.KeyAlgoECDSA384, ssh.KeyAlgoECDSA521,
			ssh.KeyAlgoRSASHA512, ssh.KeyAlgoRSASHA256,
		}
	}
	var out []string
	seen := map[string]bool{}
	add := func(a string) {
		if !seen[a] {
			seen[a] = true
			out = append(out, a)
		}
	}
	for _, w := range ke.Want {
		switch t := w.Key.Type(); t {
		case ssh.KeyAlgoRSA:
			// An RSA key is offered under the SHA-2 signature algorithms.
			add(ssh.KeyAlgoRSASHA512)
			add(ssh.KeyAlgoRSASHA256)
			add(ssh.KeyAlgoRSA)
		default:
			add(t)
		}
	}
	return out
}
