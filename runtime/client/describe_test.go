package client_test

import (
	"os"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/primerhq/primer/runtime/runtimetest"
	"github.com/primerhq/primer/runtime/server"
)

// Stat, List and writes name a file's owner and group from the sandbox's
// passwd and group files, and see those files change.
func TestFileOwners(t *testing.T) {
	etc := t.TempDir()
	uid, gid := strconv.Itoa(os.Getuid()), strconv.Itoa(os.Getgid())
	write := func(name, data string) {
		if err := os.WriteFile(filepath.Join(etc, name), []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("passwd", "alice:x:"+uid+":"+gid+"::/home/alice:/bin/sh\n")
	write("group", "staff:x:"+gid+":\n")
	e := runtimetest.Start(t, server.Config{EtcDir: etc})
	ctx := runtimetest.Ctx(t)
	fi, err := e.Client.WriteFileInfo(ctx, "f", []byte("x"), 0)
	if err != nil || fi.Owner != "alice" || fi.Group != "staff" {
		t.Fatalf("write: %+v %v", fi, err)
	}
	// Renamed in the files: the next stat says so.
	write("passwd", "bob:x:"+uid+":"+gid+"::/home/bob:/bin/sh\n# a longer file\n")
	if fi, err = e.Client.Stat(ctx, "f"); err != nil || fi.Owner != "bob" {
		t.Fatalf("stat after the change: %+v %v", fi, err)
	}
	// Ids the files do not name are numbers.
	write("passwd", "")
	write("group", "")
	ls, err := e.Client.List(ctx, ".")
	if err != nil || len(ls) != 1 || ls[0].Owner != uid || ls[0].Group != gid {
		t.Fatalf("list: %+v %v", ls, err)
	}
}

// Stat and List give a symlink's target as the link holds it.
func TestLinkTarget(t *testing.T) {
	e := runtimetest.Start(t, server.Config{})
	ctx := runtimetest.Ctx(t)
	if err := os.Symlink("some/where", filepath.Join(e.Root, "l")); err != nil {
		t.Fatal(err)
	}
	fi, err := e.Client.Stat(ctx, "l")
	if err != nil || !fi.IsSymlink || fi.LinkTarget != "some/where" {
		t.Fatalf("stat: %+v %v", fi, err)
	}
	ls, err := e.Client.List(ctx, ".")
	if err != nil || len(ls) != 1 || ls[0].LinkTarget != "some/where" {
		t.Fatalf("list: %+v %v", ls, err)
	}
}
