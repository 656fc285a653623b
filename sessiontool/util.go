package sessiontool

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"sync"
)

// ShellJoin quotes argv the way a shell would read it back.
func ShellJoin(argv []string) string {
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ShellQuote(a)
	}
	return strings.Join(q, " ")
}

// ShellQuote quotes s for a shell when it needs it.
func ShellQuote(s string) string {
	if s == "" {
		return "''"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("_@%+=:,./-", r)) {
			return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
		}
	}
	return s
}

// SHA256 is the hex digest of b.
func SHA256(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}

// Capped keeps the first max bytes written to it, notes what it dropped
// and counts every byte; writes never fail, so a chatty command still runs
// to its end. The session tools and the workspace exec API cut output
// with it.
type Capped struct {
	mu        sync.Mutex
	buf       []byte
	max       int
	truncated bool
	total     int64
}

// NewCapped keeps up to max bytes.
func NewCapped(max int) *Capped { return &Capped{max: max} }

func (b *Capped) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.total += int64(len(p))
	room := b.max - len(b.buf)
	if room < len(p) {
		b.truncated = true
		if room > 0 {
			b.buf = append(b.buf, p[:room]...)
		}
		return len(p), nil
	}
	b.buf = append(b.buf, p...)
	return len(p), nil
}

// String is what was kept.
func (b *Capped) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return string(b.buf)
}

// Total is how many bytes were written, kept or not.
func (b *Capped) Total() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.total
}

// Truncated says some bytes were dropped.
func (b *Capped) Truncated() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.truncated
}
