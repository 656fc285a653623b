package eval

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/primerhq/primer/errs"
)

// ReadJSONL reads a suite as JSONL: the first line is the suite spec
// (its cases, if any, come first), each further non-empty line one case.
// Errors name the line ("line 7: ..."); more than max bytes is
// errs.TooLarge. A max of 0 or less means MaxSuiteBytes.
func ReadJSONL(r io.Reader, max int64) (*SuiteSpec, error) {
	lr := newLineReader(r, max)
	var spec *SuiteSpec
	for {
		line, n, err := lr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if spec == nil {
			spec = new(SuiteSpec)
			if err := decodeLine(line, spec); err != nil {
				return nil, errs.Field("spec", "line %d: suite spec: %v", n, err)
			}
			continue
		}
		if len(spec.Cases) >= MaxCases {
			return nil, errs.Field("spec.cases", "line %d: more than %d cases", n, MaxCases)
		}
		var c Case
		if err := decodeLine(line, &c); err != nil {
			return nil, errs.Field("spec.cases", "line %d: %v", n, err)
		}
		spec.Cases = append(spec.Cases, c)
	}
	if spec == nil {
		return nil, errs.Field("spec", "spec: empty JSONL: the first line must be the suite spec")
	}
	return spec, nil
}

// ReadCasesJSONL reads cases, one JSON object a line. Errors name the
// line ("line 7: ..."); more than max bytes is errs.TooLarge. A max of 0
// or less means MaxSuiteBytes.
func ReadCasesJSONL(r io.Reader, max int64) ([]Case, error) {
	lr := newLineReader(r, max)
	var cases []Case
	for {
		line, n, err := lr.next()
		if err == io.EOF {
			return cases, nil
		}
		if err != nil {
			return nil, err
		}
		if len(cases) >= MaxCases {
			return nil, errs.Field("spec.cases", "line %d: more than %d cases", n, MaxCases)
		}
		var c Case
		if err := decodeLine(line, &c); err != nil {
			return nil, errs.Field("spec.cases", "line %d: %v", n, err)
		}
		cases = append(cases, c)
	}
}

// decodeLine decodes one JSON value from line into v, refusing unknown
// fields (a typo in a field name must not silently drop an expectation)
// and anything after the value.
func decodeLine(line []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if rest := bytes.TrimSpace(line[dec.InputOffset():]); len(rest) > 0 {
		return fmt.Errorf("unexpected data after the JSON object")
	}
	return nil
}

// lineReader yields the non-empty lines of a stream, numbered from 1,
// failing with errs.TooLarge as soon as more than max bytes were read:
// the limit holds while reading, so an oversized body is never buffered
// whole.
type lineReader struct {
	br  *bufio.Reader
	lim *limitReader
	n   int // number of the last line read
}

func newLineReader(r io.Reader, max int64) *lineReader {
	if max <= 0 {
		max = MaxSuiteBytes
	}
	lim := &limitReader{r: r, left: max, max: max}
	return &lineReader{br: bufio.NewReaderSize(lim, 64<<10), lim: lim}
}

// next returns the next non-empty line without its line ending, its
// number, and io.EOF after the last one. The line is valid until the next
// call.
func (lr *lineReader) next() ([]byte, int, error) {
	for {
		// ReadSlice fills the buffer or finds '\n'; a longer line (a case
		// with a few hundred KB of files) is gathered from several calls
		// without bufio.Scanner's token limit.
		line, err := lr.br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			full := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = lr.br.ReadSlice('\n')
				full = append(full, line...)
			}
			line = full
		}
		if err != nil && err != io.EOF {
			return nil, lr.n, lr.wrap(err)
		}
		if len(line) == 0 && err == io.EOF {
			return nil, lr.n, io.EOF
		}
		lr.n++
		if trimmed := bytes.TrimSpace(line); len(trimmed) > 0 {
			return trimmed, lr.n, nil
		}
		if err == io.EOF {
			return nil, lr.n, io.EOF
		}
	}
}

// wrap gives a read error its kind: TooLarge past the limit, else the
// cause named with the line it was read at.
func (lr *lineReader) wrap(err error) error {
	if errors.Is(err, errTooLarge) {
		return errs.E(errs.TooLarge, "suite: JSONL is larger than %d bytes", lr.lim.max)
	}
	return errs.E(errs.Invalid, "line %d: read: %w", lr.n+1, err)
}

// errTooLarge is the limitReader's error once the limit is passed.
var errTooLarge = errors.New("too large")

// limitReader is io.LimitReader that fails, rather than ends, when the
// stream holds more than max bytes: it reads one byte past the limit to
// tell a stream of exactly max bytes from a longer one.
type limitReader struct {
	r         io.Reader
	left, max int64
}

func (l *limitReader) Read(p []byte) (int, error) {
	if l.left < 0 {
		return 0, errTooLarge
	}
	if int64(len(p)) > l.left { // not l.left+1: that overflows for a max of MaxInt64
		p = p[:l.left+1]
	}
	n, err := l.r.Read(p)
	l.left -= int64(n)
	if l.left < 0 {
		return 0, errTooLarge
	}
	return n, err
}
