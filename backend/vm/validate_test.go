package vm_test

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/crypto/ssh"
	"golang.org/x/crypto/ssh/knownhosts"

	"github.com/primerhq/primer/backend/vm"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/errs"
)

func TestConnectionValidate(t *testing.T) {
	dir := t.TempDir()
	key := vmtest.KeyFile(t)
	kh := filepath.Join(dir, "known_hosts")
	if err := os.WriteFile(kh, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	garbage := filepath.Join(dir, "garbage")
	if err := os.WriteFile(garbage, []byte("not a key"), 0o600); err != nil {
		t.Fatal(err)
	}
	pem, err := os.ReadFile(key)
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("VMTEST_KEY", string(pem))
	signer, err := ssh.ParsePrivateKey(pem)
	if err != nil {
		t.Fatal(err)
	}
	knownLine := knownhosts.Line([]string{"10.0.0.5"}, signer.PublicKey()) + "\n"

	ok := vm.Connection{User: "root", PrivateKeyFile: key, KnownHosts: kh}
	tests := []struct {
		name  string
		edit  func(c *vm.Connection)
		field string // "" when valid
	}{
		{"valid", func(*vm.Connection) {}, ""},
		{"key from env", func(c *vm.Connection) { c.PrivateKeyFile, c.PrivateKeyEnv = "", "VMTEST_KEY" }, ""},
		{"tofu without the file", func(c *vm.Connection) { c.KnownHosts, c.TrustOnFirstUse = filepath.Join(dir, "new"), true }, ""},
		{"no user", func(c *vm.Connection) { c.User = "" }, "spec.connection.user"},
		{"no known_hosts", func(c *vm.Connection) { c.KnownHosts = "" }, "spec.connection.known_hosts_data"},
		{"inline key and known_hosts", func(c *vm.Connection) {
			c.PrivateKeyFile, c.PrivateKey, c.KnownHosts, c.KnownHostsData = "", string(pem), "", knownLine
		}, ""},
		{"both known_hosts", func(c *vm.Connection) { c.KnownHostsData = knownLine }, "spec.connection.known_hosts_data"},
		{"tofu with inline known_hosts", func(c *vm.Connection) { c.KnownHosts, c.KnownHostsData, c.TrustOnFirstUse = "", knownLine, true }, "spec.connection.trust_on_first_use"},
		{"not known_hosts lines", func(c *vm.Connection) { c.KnownHosts, c.KnownHostsData = "", "not a line" }, "spec.connection.known_hosts_data"},
		{"inline key not a key", func(c *vm.Connection) { c.PrivateKeyFile, c.PrivateKey = "", "not a key" }, "spec.connection.private_key"},
		{"missing known_hosts", func(c *vm.Connection) { c.KnownHosts = filepath.Join(dir, "nope") }, "spec.connection.known_hosts"},
		{"unreadable key file", func(c *vm.Connection) { c.PrivateKeyFile = filepath.Join(dir, "nope") }, "spec.connection.private_key_file"},
		{"not a key", func(c *vm.Connection) { c.PrivateKeyFile = garbage }, "spec.connection.private_key_file"},
		{"no key", func(c *vm.Connection) { c.PrivateKeyFile = "" }, "spec.connection.private_key"},
		{"both keys", func(c *vm.Connection) { c.PrivateKeyEnv = "VMTEST_KEY" }, "spec.connection.private_key"},
		{"inline and file keys", func(c *vm.Connection) { c.PrivateKey = string(pem) }, "spec.connection.private_key"},
		{"unset env", func(c *vm.Connection) { c.PrivateKeyFile, c.PrivateKeyEnv = "", "VMTEST_UNSET_KEY" }, "spec.connection.private_key_env"},
		{"bad timeout", func(c *vm.Connection) { c.ConnectTimeout = "soon" }, "spec.connection.connect_timeout"},
		{"bad port", func(c *vm.Connection) { c.Port = 70000 }, "spec.connection.port"},
		{"jump without address", func(c *vm.Connection) { c.Jump = &vm.JumpHost{} }, "spec.connection.jump.address"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := ok
			tt.edit(&c)
			err := c.Validate("spec.connection")
			if tt.field == "" {
				if err != nil {
					t.Fatalf("Validate: %v", err)
				}
				return
			}
			if !errs.Is(err, errs.Invalid) || errs.FieldOf(err) != tt.field {
				t.Fatalf("Validate = %v (field %q); want Invalid naming %s", err, errs.FieldOf(err), tt.field)
			}
		})
	}
}
