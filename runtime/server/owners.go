package server

// The owner and group names of the files stat, list and write describe,
// from the sandbox's passwd and group files (the ones user.ensure writes),
// so a client sees "user" rather than 1000 as ls -l would show it.

import (
	"io/fs"
	"os"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/primerhq/primer/runtime/protocol"
)

// ownerCache holds the uid and gid names, read again when either file
// changes (its size or modification time).
type ownerCache struct {
	mu     sync.Mutex
	stamp  [2]fileStamp
	users  map[uint32]string
	groups map[uint32]string
}

type fileStamp struct {
	size int64
	mod  time.Time
}

func stampOf(p string) fileStamp {
	fi, err := os.Stat(p)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mod: fi.ModTime()}
}

// owners is a namer for one request: the files are checked for changes
// once, however many entries it names.
type owners struct {
	users, groups map[uint32]string
}

func (s *Server) owners() owners {
	c := &s.ownerNames
	stamp := [2]fileStamp{stampOf(s.etcFile("passwd")), stampOf(s.etcFile("group"))}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.users == nil || stamp != c.stamp {
		c.users, c.groups = map[uint32]string{}, map[uint32]string{}
		if us, err := readPasswd(s.etcFile("passwd")); err == nil {
			for _, u := range us {
				if _, dup := c.users[u.uid]; !dup {
					c.users[u.uid] = u.name
				}
			}
		}
		if gs, err := readGroup(s.etcFile("group")); err == nil {
			for _, g := range gs {
				if _, dup := c.groups[g.gid]; !dup {
					c.groups[g.gid] = g.name
				}
			}
		}
		c.stamp = stamp
	}
	return owners{users: c.users, groups: c.groups}
}

// name fills info's owner and group from fi: the names, or the numbers of
// ids the files do not name.
func (o owners) name(info protocol.FileInfo, fi fs.FileInfo) protocol.FileInfo {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return info
	}
	info.Owner, info.Group = o.users[st.Uid], o.groups[st.Gid]
	if info.Owner == "" {
		info.Owner = strconv.FormatUint(uint64(st.Uid), 10)
	}
	if info.Group == "" {
		info.Group = strconv.FormatUint(uint64(st.Gid), 10)
	}
	return info
}
