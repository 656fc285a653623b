package vm_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/primerhq/primer/backend"
	"github.com/primerhq/primer/backend/backendtest"
	"github.com/primerhq/primer/backend/vm/vmtest"
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// hostFiles is what a link planted by a workspace's user could make root
// change on the host: the account files, a file only root reads, an empty
// root-owned directory (as /etc/profile.d may be), and whether /root gained
// a file. Owners, modes and contents.
const hostFiles = `stat -c '%n %U %G %a' /etc/passwd /etc/shadow /root/sentinel /etc/victim.d; ` +
	`sha256sum /etc/passwd /etc/shadow /root/sentinel; ls -A /root /etc/victim.d`

// TestStartFollowsNoLinks: the workspace's user (through the workspace's
// own exec) plants a link or a directory where root's start, stop or
// destroy script would write or read, by a daemon that outlives the
// workspace's teardown (it clears its environment, and the user is the
// host's, so not Primer's to kill whole) and plants again whenever the path
// is free. The workspace is then torn down and provisioned again (a
// recovery) and destroyed. Nothing outside the workspace changes on the
// host; the restart works (or, where the user broke its own workspace, is
// refused) and never writes through the link; destroy works.
func TestStartFollowsNoLinks(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	host.Exec(t, "useradd -M -s /bin/sh links && mkdir -m 0755 /etc/victim.d && printf 'root only\\n' > /root/sentinel && chmod 0600 /root/sentinel && "+
		"tar -C / -cpf /var/tmp/host-files.tar etc/passwd etc/shadow etc/group etc/gshadow root/sentinel etc/victim.d")
	// An attack that works breaks the host's accounts: each case starts
	// from them as they were.
	restore := "pkill -KILL -u links; rm -rf /root/planted /etc/victim.d; tar -C / -xpf /var/tmp/host-files.tar; true"

	for _, tt := range []struct {
		name string
		root string
		// plant runs as the workspace's user in its directory, once; with
		// again, in a loop of a daemon as well. $STATE is the host's
		// record of the workspace, $ID its id.
		plant string
		again bool
		// mayRefuse: the restart may be refused (the user broke its own
		// workspace), but never write through the link.
		mayRefuse bool
	}{
		{name: "token file linked to /etc/passwd", root: testRoot, again: true,
			plant: `T=$STATE/tok/token; [ -e $T ] || [ -L $T ] || ln -s /etc/passwd $T`},
		{name: "token file linked to a new file in /root", root: testRoot, again: true,
			plant: `T=$STATE/tok/token; [ -e $T ] || [ -L $T ] || ln -s /root/planted $T`},
		{name: "token file made a directory", root: testRoot, again: true,
			plant: `T=$STATE/tok/token; [ -e $T ] || [ -L $T ] || mkdir $T`},
		{name: "marker linked to /etc/shadow", root: testRoot, mayRefuse: true,
			plant: `rm -f .primer-workspace && ln -s /etc/shadow .primer-workspace`},
		// Under a world-writable root the user can swap its own directory
		// for a link to an empty directory of root's (as /etc/profile.d is
		// on a minimal Debian), which a start then chowns to it: such a
		// root is refused.
		{name: "workspace directory swapped for a link under /tmp", root: "/tmp", mayRefuse: true,
			plant: `cd / && mv /tmp/$ID /tmp/$ID.moved && ln -s /etc/victim.d /tmp/$ID`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			tmpl := json.RawMessage(`{"kind":"vm","root":"` + tt.root + `","user":"links"}`)
			id := backendtest.NewID(t)
			token := backendtest.NewToken(t)
			h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: tmpl, Token: token})
			if err != nil {
				if tt.mayRefuse && errs.Is(err, errs.Conflict) && strings.Contains(err.Error(), "spec.backend.root") {
					t.Logf("refused at the first start: %v", err)
					return
				}
				t.Fatalf("provision: %v", err)
			}
			t.Cleanup(func() {
				host.Exec(t, "pkill -KILL -u links; true")
				_ = b.Destroy(context.Background(), h)
				host.Exec(t, restore)
			})
			before := host.Exec(t, hostFiles)

			plant := strings.NewReplacer("$STATE", "/var/lib/primer/ws/"+id, "$ID", id).Replace(tt.plant)
			script := plant
			if tt.again {
				script += "\nenv -i setsid sh -c " + shquote("while :; do "+plant+"; sleep 0.02; done") + " </dev/null >/dev/null 2>&1 &"
			}
			c := backendtest.Dial(ctx, t, b, h, token)
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"sh", "-c", script}}, nil, nil)
			if err != nil {
				t.Fatalf("exec plant: %v", err)
			}
			t.Logf("plant %q: exit %d %s", plant, res.ExitCode, res.Stderr)
			_ = c.Close()

			if err := b.Teardown(ctx, h); err != nil {
				t.Errorf("teardown after the plant: %v", err)
			}
			newToken := backendtest.NewToken(t)
			h2, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: tmpl, Token: newToken})
			switch {
			case err == nil:
				c := backendtest.Dial(ctx, t, b, h2, newToken)
				if res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"id", "-un"}}, nil, nil); err != nil || strings.TrimSpace(string(res.Stdout)) != "links" {
					t.Errorf("after the restart id -un = %q, %v; want links", res.Stdout, err)
				}
				_ = c.Close()
			case tt.mayRefuse:
				t.Logf("restart refused: %v", err)
			default:
				t.Errorf("restart after the plant: %v", err)
			}
			if after := host.Exec(t, hostFiles); after != before {
				t.Errorf("root changed the host through the link:\nbefore:\n%s\nafter:\n%s", before, after)
			}
			if err := b.Destroy(ctx, h); err != nil {
				t.Errorf("destroy after the plant: %v", err)
			}
			const want = "/root/sentinel root root 600\n/etc/victim.d root root 755\nroot only\n"
			if after := host.Exec(t, "stat -c '%n %U %G %a' /root/sentinel /etc/victim.d; cat /root/sentinel; ls -A /etc/victim.d; ls -d /root/planted 2>/dev/null; true"); after != want {
				t.Errorf("after destroy:\n%s\nwant:\n%s", after, want)
			}
		})
	}
}

// shquote quotes s for a POSIX shell.
func shquote(s string) string { return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'" }

// TestRootUserRefused: on a provider without allow_root_user a template
// whose workspaces would run as root is refused when stored and at
// provision, naming spec.backend.user: by name (root, or no user with root
// as the connection's) before anything runs on the host, and a user the
// host has that is as powerful (uid 0 under another name, a sudoer) by the
// host, before anything of the workspace is made. With allow_root_user the
// same templates run.
func TestRootUserRefused(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	host.Exec(t, "useradd -o -u 0 -g 0 -M -s /bin/sh toor && useradd -M -G sudo -s /bin/sh ops")
	conn := host.Connection(t)
	strict := newBackend(t, providerConfig(t, conn, host), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()

	for _, tt := range []struct {
		name, user string
		byName     bool   // refused without asking the host
		want       string // in the message
	}{
		{name: "root", user: "root", byName: true, want: `"root" runs workspaces as root`},
		{name: "no user, root connection", user: "", byName: true, want: "the connection's user, root"},
		{name: "uid 0 under another name", user: "toor", want: "toor is uid 0"},
		{name: "a sudoer", user: "ops", want: "ops is in group sudo"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			tmpl := `{"kind":"vm","root":"` + testRoot + `"`
			if tt.user != "" {
				tmpl += `,"user":"` + tt.user + `"`
			}
			tmpl += `}`
			err := strict.ValidateTemplate(json.RawMessage(tmpl))
			if tt.byName {
				if !errs.Is(err, errs.Forbidden) || errs.FieldOf(err) != "spec.backend.user" || !strings.Contains(err.Error(), tt.want) {
					t.Errorf("ValidateTemplate = %v (kind %v, field %q); want forbidden on spec.backend.user saying %q", err, errs.KindOf(err), errs.FieldOf(err), tt.want)
				}
			} else if err != nil {
				t.Errorf("ValidateTemplate = %v; the host decides about %s", err, tt.user)
			}

			sessions := strings.Count(host.Logs(t), "Accepted publickey")
			id := backendtest.NewID(t)
			_, err = strict.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, Template: json.RawMessage(tmpl), Token: backendtest.NewToken(t)})
			if !errs.Is(err, errs.Forbidden) || errs.FieldOf(err) != "spec.backend.user" || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("provision = %v (kind %v, field %q); want forbidden on spec.backend.user saying %q", err, errs.KindOf(err), errs.FieldOf(err), tt.want)
			}
			if tt.byName {
				if n := strings.Count(host.Logs(t), "Accepted publickey"); n != sessions {
					t.Errorf("a template refused by its user's name opened %d SSH connections to the host", n-sessions)
				}
			}
			if left := host.Exec(t, "ls -d "+testRoot+"/"+id+" /var/lib/primer/ws/"+id+" 2>/dev/null; ps -eo args | grep -F -- '"+id+"' | grep -v grep; true"); strings.TrimSpace(left) != "" {
				t.Errorf("a refused provision left on the host:\n%s", left)
			}
		})
	}

	t.Run("allowed", func(t *testing.T) {
		doc, err := json.Marshal(map[string]any{"connection": conn, "hosts": []map[string]string{{"address": host.Addr}}, "allow_root_user": true})
		if err != nil {
			t.Fatal(err)
		}
		b := newBackend(t, doc, nil)
		for _, user := range []string{"root", "toor"} {
			tmpl := `{"kind":"vm","root":"` + testRoot + `","user":"` + user + `"}`
			if err := b.ValidateTemplate(json.RawMessage(tmpl)); err != nil {
				t.Fatalf("ValidateTemplate(%s) with allow_root_user = %v", tmpl, err)
			}
			token := backendtest.NewToken(t)
			h := provision(t, b, tmpl, token, nil)
			c := backendtest.Dial(ctx, t, b, h, token)
			res, err := c.Exec(ctx, protocol.ExecRequest{Args: []string{"id", "-u"}}, nil, nil)
			if err != nil || strings.TrimSpace(string(res.Stdout)) != "0" {
				t.Errorf("user %s with allow_root_user: id -u = %q, %v; want 0", user, res.Stdout, err)
			}
			_ = c.Close()
		}
	})
}

// TestUserOfAnotherTenantRefused: a user Primer made for one tenant's
// workspaces is not another tenant's to name (it would share the first's
// files and processes): refused at the host before anything of the
// workspace is made, naming spec.backend.user; the first tenant's
// workspaces keep running as it, and the same tenant may name it again.
func TestUserOfAnotherTenantRefused(t *testing.T) {
	host := vmtest.Start(t, vmtest.Options{})
	b := newBackend(t, providerConfig(t, host.Connection(t), host), nil)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	tmpl := json.RawMessage(`{"kind":"vm","root":"` + testRoot + `","user":"primer-team"}`)
	prov := func(tenant string) (backend.Handle, string, error) {
		id, token := backendtest.NewID(t), backendtest.NewToken(t)
		h, err := b.Provision(ctx, backend.ProvisionRequest{WorkspaceID: id, TenantID: tenant, Template: tmpl, Token: token})
		if err == nil {
			t.Cleanup(func() { _ = b.Destroy(context.Background(), h) })
		}
		return h, id, err
	}
	first, _, err := prov("alpha")
	if err != nil {
		t.Fatal(err)
	}
	_, id, err := prov("beta")
	if !errs.Is(err, errs.Forbidden) || errs.FieldOf(err) != "spec.backend.user" || !strings.Contains(err.Error(), "another tenant's workspaces") {
		t.Fatalf("another tenant naming alpha's user: %v (kind %v, field %q); want forbidden on spec.backend.user", err, errs.KindOf(err), errs.FieldOf(err))
	}
	if left := host.Exec(t, "ls -d "+testRoot+"/"+id+" /var/lib/primer/ws/"+id+" /var/lib/primer/users/primer-team/"+id+" 2>/dev/null; true"); strings.TrimSpace(left) != "" {
		t.Errorf("the refused provision left on the host:\n%s", left)
	}
	if _, _, err := prov("alpha"); err != nil {
		t.Errorf("the same tenant naming its user again: %v", err)
	}
	if _, err := b.Endpoint(ctx, first, ""); err != nil {
		t.Errorf("alpha's first workspace after the refusal: %v", err)
	}
}
