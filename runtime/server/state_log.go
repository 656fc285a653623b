package server

import (
	"context"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/object"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

func (s *Server) stateLog(ctx context.Context, req *protocol.Request) (any, error) {
	const op = "state.log"
	if req.Limit < 0 {
		return nil, errs.Field("limit", "%s: limit must not be negative", op)
	}
	if req.TrailerKey == "" && req.TrailerValue != "" {
		return nil, errs.Field("trailer_key", "%s: trailer_value needs a trailer_key", op)
	}
	unlock, err := s.lockState(ctx)
	if err != nil {
		return nil, err
	}
	defer unlock()
	r, err := s.openState(op, false)
	if err != nil {
		return nil, err
	}
	out := []protocol.StateCommit{}
	if r == nil {
		return protocol.StateLogResult{Commits: out}, nil
	}
	for h := r.head; !h.IsZero(); {
		c, err := r.commit(op, h)
		if err != nil {
			return nil, err
		}
		trailers := parseTrailers(c.Message)
		if req.TrailerKey == "" || hasTrailer(trailers, req.TrailerKey, req.TrailerValue) {
			out = append(out, commitInfo(c, trailers))
			if req.Limit > 0 && len(out) == req.Limit {
				break
			}
		}
		if len(c.ParentHashes) == 0 {
			break
		}
		h = c.ParentHashes[0]
	}
	return protocol.StateLogResult{Commits: out}, nil
}

func commitInfo(c *object.Commit, trailers []trailer) protocol.StateCommit {
	parents := make([]string, len(c.ParentHashes))
	for i, p := range c.ParentHashes {
		parents[i] = p.String()
	}
	var tm map[string]string
	for _, t := range trailers {
		if tm == nil {
			tm = map[string]string{}
		}
		if _, dup := tm[t.key]; !dup {
			tm[t.key] = t.value
		}
	}
	return protocol.StateCommit{
		Commit:      c.Hash.String(),
		Parents:     parents,
		AuthorName:  c.Author.Name,
		AuthorEmail: c.Author.Email,
		Time:        c.Author.When,
		Message:     strings.TrimRight(c.Message, "\n"),
		Trailers:    tm,
	}
}

type trailer struct{ key, value string }

// parseTrailers reads the trailers of a commit message the way git
// interpret-trailers does for the common case: the last paragraph, if it
// is not also the first (the subject), made only of "Key: value" lines
// (a line starting with blank space continues the previous value).
func parseTrailers(msg string) []trailer {
	lines := strings.Split(strings.TrimRight(msg, " \t\r\n"), "\n")
	start := len(lines)
	for start > 0 && strings.TrimSpace(lines[start-1]) != "" {
		start--
	}
	if start == 0 {
		return nil // one paragraph: the subject, not trailers
	}
	var out []trailer
	for _, l := range lines[start:] {
		l = strings.TrimRight(l, "\r")
		if (l[0] == ' ' || l[0] == '\t') && len(out) > 0 {
			out[len(out)-1].value += " " + strings.TrimSpace(l)
			continue
		}
		k, v, ok := strings.Cut(l, ":")
		k = strings.TrimRight(k, " \t")
		if !ok || !isTrailerKey(k) {
			return nil
		}
		out = append(out, trailer{key: k, value: strings.TrimSpace(v)})
	}
	return out
}

func isTrailerKey(k string) bool {
	if k == "" || k[0] == '-' {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// hasTrailer matches the key without case, as git does, and the value
// exactly; an empty value matches any.
func hasTrailer(ts []trailer, key, value string) bool {
	for _, t := range ts {
		if strings.EqualFold(t.key, key) && (value == "" || t.value == value) {
			return true
		}
	}
	return false
}
