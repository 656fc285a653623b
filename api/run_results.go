package api

import (
	"bufio"
	"encoding/json"
	"net/http"
	"strings"

	"github.com/gin-gonic/gin"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/eval"
)

// Formats of a listing answer.
const (
	formatJSON  = "json"
	formatJSONL = "jsonl"
	formatJUnit = "junit"
)

// answerFormat picks the format of an answer among allowed (the first is
// the default): ?format= wins, else the Accept header (application/x-ndjson
// or application/jsonl for jsonl, application/xml or text/xml for junit).
// An unknown ?format= is 400 naming the parameter.
func answerFormat(c *gin.Context, allowed ...string) (string, error) {
	if f := c.Query("format"); f != "" {
		for _, a := range allowed {
			if f == a {
				return f, nil
			}
		}
		return "", errs.Field("format", "format: %q is not one of %s", f, strings.Join(allowed, ", "))
	}
	accept := c.GetHeader("Accept")
	for _, a := range allowed[1:] {
		switch {
		case a == formatJSONL && (strings.Contains(accept, mediaNDJSON) || strings.Contains(accept, mediaJSONL)):
			return a, nil
		case a == formatJUnit && (strings.Contains(accept, "application/xml") || strings.Contains(accept, "text/xml")):
			return a, nil
		}
	}
	return allowed[0], nil
}

// runResults lists a run's case results in ordinal order: JSON
// ({"items":[result...]}, attempts and artifacts included), JSONL (one
// result a line) or JUnit XML for CI systems.
func (s *server) runResults(c *gin.Context) {
	ctx := c.Request.Context()
	format, err := answerFormat(c, formatJSON, formatJSONL, formatJUnit)
	if err != nil {
		s.fail(c, err)
		return
	}
	run, err := s.runOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	results, err := s.cfg.Store.ListCaseResults(ctx, run.ID, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	switch format {
	case formatJUnit:
		doc, err := eval.JUnit(run, results)
		if err != nil {
			s.fail(c, err)
			return
		}
		c.Data(http.StatusOK, "application/xml; charset=utf-8", doc)
	case formatJSONL:
		c.Status(http.StatusOK)
		c.Header("Content-Type", mediaNDJSON)
		w := bufio.NewWriter(c.Writer)
		enc := json.NewEncoder(w) // one value and a newline per Encode
		for i := range results {
			if err := enc.Encode(&results[i]); err != nil {
				return // the client left
			}
		}
		_ = w.Flush()
	default:
		c.JSON(http.StatusOK, list(results))
	}
}

// compareRuns compares a run (head) with ?base=RUN by case id:
// regressions, fixes, new and missing cases, score changes.
func (s *server) compareRuns(c *gin.Context) {
	ctx := c.Request.Context()
	baseID := c.Query("base")
	if baseID == "" {
		s.fail(c, errs.Field("base", "base: required: the id of the run to compare with"))
		return
	}
	head, err := s.runOf(c, c.Param("id"))
	if err != nil {
		s.fail(c, err)
		return
	}
	base, err := s.runOf(c, baseID)
	if errs.Is(err, errs.NotFound) {
		s.fail(c, errs.E(errs.NotFound, "base run %s: not found", baseID))
		return
	}
	if err != nil {
		s.fail(c, err)
		return
	}
	headResults, err := s.cfg.Store.ListCaseResults(ctx, head.ID, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	baseResults, err := s.cfg.Store.ListCaseResults(ctx, base.ID, false)
	if err != nil {
		s.fail(c, err)
		return
	}
	c.JSON(http.StatusOK, eval.Compare(base.ID, baseResults, head.ID, headResults))
}
