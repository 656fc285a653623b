package server

// Users of the sandbox: a command runs as, and a created file belongs to, a
// user named in the sandbox's own /etc/passwd and /etc/group. The runtime
// reads those files itself (no getent, no NSS: images without libc tools
// work the same), and user.ensure appends to them (no useradd needed in
// the image).

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// account is a user of the sandbox as its passwd and group files hold it.
type account struct {
	name     string
	uid, gid uint32
	groups   []uint32 // supplementary groups, the primary one included
	home     string
	shell    string
}

// userName is what user.ensure accepts as a new name: the portable set
// useradd accepts by default.
var userName = regexp.MustCompile(`^[a-z_][a-z0-9_-]{0,31}$`)

// firstUID is where user.ensure starts looking for a free uid, as useradd
// does for a regular user.
const firstUID = 1000

// passwdEntry is one line of a passwd file.
type passwdEntry struct {
	name     string
	uid, gid uint32
	home, sh string
}

// groupEntry is one line of a group file.
type groupEntry struct {
	name    string
	gid     uint32
	members []string
}

// etcFile is the path of one of the sandbox's account files.
func (s *Server) etcFile(name string) string { return filepath.Join(s.etcDir, name) }

// readPasswd parses the passwd file; malformed lines are skipped, as libc
// does.
func readPasswd(p string) ([]passwdEntry, error) {
	var out []passwdEntry
	err := eachLine(p, func(line string) {
		f := strings.Split(line, ":")
		if len(f) < 7 {
			return
		}
		uid, err1 := strconv.ParseUint(f[2], 10, 32)
		gid, err2 := strconv.ParseUint(f[3], 10, 32)
		if err1 != nil || err2 != nil {
			return
		}
		out = append(out, passwdEntry{name: f[0], uid: uint32(uid), gid: uint32(gid), home: f[5], sh: f[6]})
	})
	return out, err
}

// readGroup parses the group file; malformed lines are skipped.
func readGroup(p string) ([]groupEntry, error) {
	var out []groupEntry
	err := eachLine(p, func(line string) {
		f := strings.Split(line, ":")
		if len(f) < 4 {
			return
		}
		gid, err := strconv.ParseUint(f[2], 10, 32)
		if err != nil {
			return
		}
		var members []string
		for m := range strings.SplitSeq(f[3], ",") {
			if m = strings.TrimSpace(m); m != "" {
				members = append(members, m)
			}
		}
		out = append(out, groupEntry{name: f[0], gid: uint32(gid), members: members})
	})
	return out, err
}

// eachLine calls fn with every non-comment line of p. A missing file has
// no lines.
func eachLine(p string, fn func(string)) error {
	f, err := os.Open(p)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fn(line)
	}
	return sc.Err()
}

// lookupUser finds name in the sandbox's passwd file, with its groups.
// An unknown name is not_found.
func (s *Server) lookupUser(name string) (*account, error) {
	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	return s.lookupUserLocked(name)
}

func (s *Server) lookupUserLocked(name string) (*account, error) {
	users, err := readPasswd(s.etcFile("passwd"))
	if err != nil {
		return nil, fmt.Errorf("user %s: read passwd: %w", name, err)
	}
	i := slices.IndexFunc(users, func(u passwdEntry) bool { return u.name == name })
	if i < 0 {
		return nil, errs.E(errs.NotFound, "user %s: not in the sandbox's %s (create it with user.ensure)", name, s.etcFile("passwd"))
	}
	u := users[i]
	groups, err := readGroup(s.etcFile("group"))
	if err != nil {
		return nil, fmt.Errorf("user %s: read group: %w", name, err)
	}
	a := &account{name: u.name, uid: u.uid, gid: u.gid, home: u.home, shell: u.sh, groups: []uint32{u.gid}}
	for _, g := range groups {
		if slices.Contains(g.members, name) && !slices.Contains(a.groups, g.gid) {
			a.groups = append(a.groups, g.gid)
		}
	}
	return a, nil
}

// userOf resolves a request's user, the default user when it names none:
// nil for neither (the runtime's own).
func (s *Server) userOf(name string) (*account, error) {
	if name == "" {
		name = s.user
	}
	if name == "" {
		return nil, nil
	}
	return s.lookupUser(name)
}

// credential is what exec sets to run as a: nothing when a is the runtime's
// own user already, so a runtime that is not root can still name itself.
func (a *account) credential() *syscall.Credential {
	if a == nil || (uint32(os.Geteuid()) == a.uid && uint32(os.Getegid()) == a.gid && os.Geteuid() != 0) {
		return nil
	}
	return &syscall.Credential{Uid: a.uid, Gid: a.gid, Groups: a.groups}
}

// chown gives f, just created, to a; nothing without a user or when it is
// the runtime's own.
func (a *account) chown(f *os.File) error {
	if a == nil || (uint32(os.Geteuid()) == a.uid && uint32(os.Getegid()) == a.gid) {
		return nil
	}
	return f.Chown(int(a.uid), int(a.gid))
}

// ensureUser answers user.ensure.
func (s *Server) ensureUser(ctx context.Context, req *protocol.Request) (any, error) {
	if !s.whole {
		return nil, errs.Field("op", "user.ensure %s: the runtime does not own the sandbox's users (it serves one directory, not a whole sandbox: --fs=%s)", req.User, protocol.FSRoot)
	}
	name := req.User
	if !userName.MatchString(name) {
		return nil, errs.Field("user", "user.ensure %q: a user name is 1 to 32 of a-z, 0-9, _ and -, not starting with a digit or -", name)
	}
	if req.UID < 0 || req.UID > 1<<31-2 {
		return nil, errs.Field("uid", "user.ensure %s: uid %d out of range", name, req.UID)
	}
	home := req.Home
	if home == "" {
		home = "/home/" + name
	}
	if !filepath.IsAbs(home) || strings.ContainsAny(home, ":\n\x00") {
		return nil, errs.Field("home", "user.ensure %s: home %q must be an absolute path without ':'", name, home)
	}
	home = filepath.Clean(home)

	s.usersMu.Lock()
	defer s.usersMu.Unlock()
	if a, err := s.lookupUserLocked(name); err == nil {
		return a.info(false), nil
	} else if !errs.Is(err, errs.NotFound) {
		return nil, err
	}
	users, err := readPasswd(s.etcFile("passwd"))
	if err != nil {
		return nil, fmt.Errorf("user.ensure %s: read passwd: %w", name, err)
	}
	groups, err := readGroup(s.etcFile("group"))
	if err != nil {
		return nil, fmt.Errorf("user.ensure %s: read group: %w", name, err)
	}
	uidTaken := func(id uint32) bool {
		return slices.ContainsFunc(users, func(u passwdEntry) bool { return u.uid == id })
	}
	gidTaken := func(id uint32) bool {
		return slices.ContainsFunc(groups, func(g groupEntry) bool { return g.gid == id })
	}
	uid := uint32(req.UID)
	switch {
	case uid != 0 && uidTaken(uid):
		return nil, errs.E(errs.Conflict, "user.ensure %s: uid %d belongs to another user", name, uid)
	case uid == 0:
		// useradd's habit: the first uid free as a uid and as a gid, so
		// the user's own group can share the number.
		for uid = firstUID; uidTaken(uid) || gidTaken(uid); uid++ {
		}
	}
	// The user's own group: an existing group of that name, else a new
	// one numbered like the user when free.
	var gid uint32
	newGroup := true
	if i := slices.IndexFunc(groups, func(g groupEntry) bool { return g.name == name }); i >= 0 {
		gid, newGroup = groups[i].gid, false
	} else {
		for gid = uid; gidTaken(gid); gid++ {
		}
	}
	shell := "/bin/sh"
	if _, err := os.Stat("/bin/bash"); err == nil {
		shell = "/bin/bash"
	}
	if newGroup {
		if err := appendLine(s.etcFile("group"), fmt.Sprintf("%s:x:%d:", name, gid)); err != nil {
			return nil, fmt.Errorf("user.ensure %s: %w", name, err)
		}
	}
	if err := appendLine(s.etcFile("passwd"), fmt.Sprintf("%s:x:%d:%d::%s:%s", name, uid, gid, home, shell)); err != nil {
		return nil, fmt.Errorf("user.ensure %s: %w", name, err)
	}
	// A locked password: the user exists for su and login tools, and no
	// password opens it.
	if _, err := os.Stat(s.etcFile("shadow")); err == nil {
		days := time.Now().Unix() / 86400
		if err := appendLine(s.etcFile("shadow"), fmt.Sprintf("%s:!:%d:0:99999:7:::", name, days)); err != nil {
			return nil, fmt.Errorf("user.ensure %s: %w", name, err)
		}
	}
	if err := makeHome(home, uid, gid); err != nil {
		return nil, fmt.Errorf("user.ensure %s: home %s: %w", name, home, err)
	}
	a := &account{name: name, uid: uid, gid: gid, home: home, shell: shell}
	return a.info(true), nil
}

func (a *account) info(created bool) protocol.UserInfo {
	return protocol.UserInfo{Name: a.name, UID: int(a.uid), GID: int(a.gid), Home: a.home, Shell: a.shell, Created: created}
}

// appendLine adds line to the file p in one write, after a newline when
// the file does not end with one. The file keeps its mode and owner.
func appendLine(p, line string) error {
	f, err := os.OpenFile(p, os.O_RDWR|os.O_APPEND|os.O_CREATE, 0o644)
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	var buf bytes.Buffer
	if fi.Size() > 0 {
		last := make([]byte, 1)
		if _, err := f.ReadAt(last, fi.Size()-1); err != nil {
			return err
		}
		if last[0] != '\n' {
			buf.WriteByte('\n')
		}
	}
	buf.WriteString(line)
	buf.WriteByte('\n')
	if _, err := f.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("append to %s: %w", p, err)
	}
	return f.Sync()
}

// makeHome creates the home directory, 0755 and owned by the user, with
// missing parents owned by root. An existing directory is left as it is:
// it may be shared (a home of "/tmp").
func makeHome(home string, uid, gid uint32) error {
	if err := os.MkdirAll(filepath.Dir(home), 0o755); err != nil {
		return err
	}
	err := os.Mkdir(home, 0o755)
	if errors.Is(err, fs.ErrExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if err := os.Chmod(home, 0o755); err != nil { // past the umask
		return err
	}
	return os.Lchown(home, int(uid), int(gid))
}
