package errs

import (
	"slices"
	"strings"
)

// Within wraps err under prefix, as fmt.Errorf("%s: %w", prefix, err)
// would, but says each part of the prefix once: leading parts of err's
// message that repeat one of prefix's parts are dropped, and so is the
// prefix's object (its first part, "workspace ws-1") wherever a lower
// layer named it again. So when every layer names its object, a backend's
// "workspace ws-1: container backend: pull" under "workspace ws-1:
// provision" reads "workspace ws-1: provision: container backend: pull",
// not "workspace ws-1: provision: workspace ws-1: container backend:
// pull". The kind and the chain (errors.Is, errors.As, KindOf, FieldOf)
// are err's. A nil err stays nil.
func Within(prefix string, err error) error {
	if err == nil {
		return nil
	}
	parts := strings.Split(prefix, ": ")
	segs := strings.Split(err.Error(), ": ")
	// Leading repeats of any part of the prefix.
	for len(segs) > 1 && slices.Contains(parts, segs[0]) {
		segs = segs[1:]
	}
	// The object again, deeper down (a step between named it first).
	out := segs[:0:0]
	for i, s := range segs {
		if i < len(segs)-1 && s == parts[0] {
			continue
		}
		out = append(out, s)
	}
	return &within{msg: prefix + ": " + strings.Join(out, ": "), err: err}
}

type within struct {
	msg string
	err error
}

func (w *within) Error() string { return w.msg }
func (w *within) Unwrap() error { return w.err }
