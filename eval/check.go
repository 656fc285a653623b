package eval

import (
	"fmt"
	"net/url"
	"path"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/robfig/cron/v3"

	"github.com/primerhq/primer/errs"
)

// Limits of labels, the same as every Primer object's.
const (
	maxLabels        = 64
	maxLabelKeyLen   = 128
	maxLabelValueLen = 1024
)

// idPattern is the rule of every Primer id (a copy of api's: eval must not
// import api): lower-case DNS-ish names, so they are safe in paths, labels,
// workflow ids and Kubernetes object names.
var idPattern = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,126}[a-z0-9])?$`)

// Check validates a suite document and fills its defaults (Concurrency,
// Retries, Schedule.Overlap and TimeZone). Every error is errs.Invalid
// naming the field as a path under "spec", e.g. "spec.cases[3].id",
// "spec.concurrency", "spec.schedule.cron", "spec.cases[2].files[../x]".
// It checks: id; exactly one of template_id and pool_id; concurrency and
// retries in range; at least one case and at most MaxCases; case ids valid
// and unique; a command on every case; paths (files, expect.files,
// score_file, collect, defaults.files) relative and inside the workspace;
// timeouts in range; stdout_matches compiles; labels; schedule (cron or
// interval, not both; time zone loads; overlap known). It does not check
// that the template or pool exists.
func (s *SuiteSpec) Check() error {
	if err := checkID("spec.id", s.ID); err != nil {
		return err
	}
	switch {
	case s.TemplateID != "" && s.PoolID != "":
		return errs.Field("spec.template_id", "spec.template_id: set template_id or pool_id, not both")
	case s.TemplateID == "" && s.PoolID == "":
		return errs.Field("spec.template_id", "spec.template_id: one of template_id and pool_id is required (where the cases run)")
	case s.TemplateID != "":
		if err := checkID("spec.template_id", s.TemplateID); err != nil {
			return err
		}
	default:
		if err := checkID("spec.pool_id", s.PoolID); err != nil {
			return err
		}
	}

	if s.Concurrency == 0 {
		s.Concurrency = DefaultConcurrency
	}
	if s.Concurrency < 1 || s.Concurrency > MaxConcurrency {
		return errs.Field("spec.concurrency", "spec.concurrency: %d is out of range (1..%d)", s.Concurrency, MaxConcurrency)
	}
	if s.Retries == nil {
		r := DefaultRetries
		s.Retries = &r
	}
	if *s.Retries < 0 || *s.Retries > MaxRetries {
		return errs.Field("spec.retries", "spec.retries: %d is out of range (0..%d)", *s.Retries, MaxRetries)
	}
	if s.WebhookURL != "" {
		if err := checkWebhook("spec.webhook_url", s.WebhookURL); err != nil {
			return err
		}
	}
	if err := checkDefaults("spec.defaults", s.Defaults); err != nil {
		return err
	}
	if s.Schedule != nil {
		if err := s.Schedule.check("spec.schedule"); err != nil {
			return err
		}
	}

	switch {
	case len(s.Cases) == 0:
		return errs.Field("spec.cases", "spec.cases: at least one case is required")
	case len(s.Cases) > MaxCases:
		return errs.Field("spec.cases", "spec.cases: %d cases, at most %d are allowed", len(s.Cases), MaxCases)
	}
	seen := make(map[string]int, len(s.Cases))
	for i := range s.Cases {
		c := &s.Cases[i]
		prefix := fmt.Sprintf("spec.cases[%d]", i)
		if err := checkID(prefix+".id", c.ID); err != nil {
			return err
		}
		if j, dup := seen[c.ID]; dup {
			return errs.Field(prefix+".id", "%s.id: %q is a duplicate of spec.cases[%d].id", prefix, c.ID, j)
		}
		seen[c.ID] = i
		if err := checkCase(prefix, c); err != nil {
			return err
		}
	}
	return nil
}

// checkID checks a user-chosen id; field names the input field.
func checkID(field, id string) error {
	if id == "" {
		return errs.Field(field, "%s: required", field)
	}
	if !idPattern.MatchString(id) {
		return errs.Field(field, "%s: %q is not a valid id (lower-case letters, digits, '.', '_', '-', 1-128 characters, starting and ending with a letter or digit)", field, id)
	}
	return nil
}

// checkWebhook checks that u is an absolute http or https URL.
func checkWebhook(field, u string) error {
	parsed, err := url.Parse(u)
	if err != nil {
		return errs.Field(field, "%s: %v", field, err)
	}
	if (parsed.Scheme != "http" && parsed.Scheme != "https") || parsed.Host == "" {
		return errs.Field(field, "%s: %q is not an http or https URL", field, u)
	}
	return nil
}

// checkDefaults checks the fields a suite sets for all its cases.
func checkDefaults(prefix string, d CaseDefaults) error {
	if err := checkTimeout(prefix+".timeout", d.Timeout); err != nil {
		return err
	}
	if err := checkEnv(prefix+".env", d.Env); err != nil {
		return err
	}
	if err := checkFiles(prefix+".files", d.Files); err != nil {
		return err
	}
	return checkSetup(prefix+".setup", d.Setup)
}

// checkCase checks one case but its id; prefix is "spec.cases[i]".
func checkCase(prefix string, c *Case) error {
	if err := checkCommand(prefix+".command", c.Command); err != nil {
		return err
	}
	if err := checkFiles(prefix+".files", c.Files); err != nil {
		return err
	}
	if err := checkSetup(prefix+".setup", c.Setup); err != nil {
		return err
	}
	if err := checkEnv(prefix+".env", c.Env); err != nil {
		return err
	}
	if err := checkTimeout(prefix+".timeout", c.Timeout); err != nil {
		return err
	}
	if err := checkExpect(prefix+".expect", c.Expect); err != nil {
		return err
	}
	if c.ScoreFile != "" {
		if err := checkPath(prefix+".score_file", c.ScoreFile); err != nil {
			return err
		}
	}
	for i, p := range c.Collect {
		if err := checkPath(fmt.Sprintf("%s.collect[%d]", prefix, i), p); err != nil {
			return err
		}
	}
	return checkLabels(prefix+".labels", c.Labels)
}

// checkCommand wants a script or a non-empty argument vector whose program
// is named; a NUL byte cannot be passed to exec.
func checkCommand(field string, c Command) error {
	if c.IsZero() {
		return errs.Field(field, "%s: required (a list of arguments, or a script run with sh -c)", field)
	}
	if c.Script != "" {
		if strings.IndexByte(c.Script, 0) >= 0 {
			return errs.Field(field, "%s: script contains a NUL byte", field)
		}
		return nil
	}
	if c.Args[0] == "" {
		return errs.Field(field, "%s: the first argument (the program) is empty", field)
	}
	for i, a := range c.Args {
		if strings.IndexByte(a, 0) >= 0 {
			return errs.Field(field, "%s: argument %d contains a NUL byte", field, i)
		}
	}
	return nil
}

// checkSetup wants every setup command to be a non-empty script.
func checkSetup(field string, setup []string) error {
	for i, s := range setup {
		f := fmt.Sprintf("%s[%d]", field, i)
		if strings.TrimSpace(s) == "" {
			return errs.Field(f, "%s: empty command", f)
		}
		if strings.IndexByte(s, 0) >= 0 {
			return errs.Field(f, "%s: command contains a NUL byte", f)
		}
	}
	return nil
}

// checkEnv wants names a process environment can hold.
func checkEnv(field string, env map[string]string) error {
	for _, k := range sortedKeys(env) {
		f := field + "[" + fieldKey(k) + "]"
		if k == "" || strings.ContainsAny(k, "=\x00") {
			return errs.Field(f, "%s: %q is not a valid environment variable name", f, k)
		}
		if strings.IndexByte(env[k], 0) >= 0 {
			return errs.Field(f, "%s: value contains a NUL byte", f)
		}
	}
	return nil
}

// checkFiles wants every path inside the workspace.
func checkFiles(field string, files map[string]File) error {
	for _, p := range sortedKeys(files) {
		if err := checkPath(field+"["+fieldKey(p)+"]", p); err != nil {
			return err
		}
	}
	return nil
}

// checkPath wants p to name a file inside the workspace: relative, not
// leaving it through "..", not empty and without a NUL byte. Workspaces
// are Linux file systems whatever the server runs on, hence path, not
// filepath. The runtime checks again against symlinks; this gives the
// author a clear error before anything runs.
func checkPath(field, p string) error {
	switch {
	case p == "":
		return errs.Field(field, "%s: empty path", field)
	case strings.IndexByte(p, 0) >= 0:
		return errs.Field(field, "%s: path contains a NUL byte", field)
	case path.IsAbs(p):
		return errs.Field(field, "%s: path %s must be relative to the workspace root", field, p)
	}
	clean := path.Clean(p)
	if clean == ".." || strings.HasPrefix(clean, "../") {
		return errs.Field(field, "%s: path %s leaves the workspace", field, p)
	}
	if clean == "." {
		return errs.Field(field, "%s: path %s names the workspace root, not a file", field, p)
	}
	return nil
}

// checkTimeout wants 0 (the default) up to MaxTimeout.
func checkTimeout(field string, d Duration) error {
	if d < 0 || d.D() > MaxTimeout {
		return errs.Field(field, "%s: %s is out of range (0 for the default, up to %s)", field, d.D(), MaxTimeout)
	}
	return nil
}

// checkExpect checks what a passing outcome looks like.
func checkExpect(prefix string, e Expect) error {
	if e.ExitCode != nil && (*e.ExitCode < 0 || *e.ExitCode > 255) {
		return errs.Field(prefix+".exit_code", "%s.exit_code: %d is out of range (0..255)", prefix, *e.ExitCode)
	}
	if e.StdoutMatches != "" {
		if _, err := regexp.Compile(e.StdoutMatches); err != nil {
			return errs.Field(prefix+".stdout_matches", "%s.stdout_matches: %v", prefix, err)
		}
	}
	return checkFiles(prefix+".files", e.Files)
}

// checkLabels applies the label rules of every Primer object.
func checkLabels(field string, labels map[string]string) error {
	if len(labels) > maxLabels {
		return errs.Field(field, "%s: %d labels, at most %d are allowed", field, len(labels), maxLabels)
	}
	for _, k := range sortedKeys(labels) {
		if k == "" || len(k) > maxLabelKeyLen || !printable(k) {
			return errs.Field(field, "%s: key %q must be 1-%d printable characters", field, k, maxLabelKeyLen)
		}
		if v := labels[k]; len(v) > maxLabelValueLen || !printable(v) {
			return errs.Field(field, "%s: value of %q must be at most %d printable characters", field, k, maxLabelValueLen)
		}
	}
	return nil
}

// check validates a schedule and fills its defaults (TimeZone, Overlap).
func (sc *Schedule) check(prefix string) error {
	cronField, intervalField := prefix+".cron", prefix+".interval"
	expr := strings.TrimSpace(sc.Cron)
	switch {
	case expr != "" && sc.Interval != 0:
		return errs.Field(cronField, "%s: set cron or interval, not both", cronField)
	case expr == "" && sc.Interval == 0:
		return errs.Field(cronField, "%s: one of cron and interval is required in a schedule", cronField)
	case sc.Interval != 0 && sc.Interval.D() < time.Second:
		return errs.Field(intervalField, "%s: %s is too short (at least 1s)", intervalField, sc.Interval.D())
	}
	if expr != "" {
		// The time zone has its own field; "@every" is what interval is
		// for. One way to say each keeps the Temporal schedule made from
		// the suite the same as what was validated here.
		if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
			return errs.Field(cronField, "%s: set the time zone with time_zone, not in the expression", cronField)
		}
		if strings.HasPrefix(expr, "@every") {
			return errs.Field(cronField, "%s: use interval instead of @every", cronField)
		}
		if _, err := cron.ParseStandard(expr); err != nil {
			return errs.Field(cronField, "%s: %q is not a valid cron expression (5 fields, or a descriptor such as @daily): %v", cronField, sc.Cron, err)
		}
	}

	tzField := prefix + ".time_zone"
	if sc.TimeZone == "" {
		sc.TimeZone = "UTC"
	}
	// "Local" would mean whatever zone the server happens to run in.
	if sc.TimeZone == "Local" {
		return errs.Field(tzField, "%s: name an IANA time zone such as Europe/Berlin, not Local", tzField)
	}
	if _, err := time.LoadLocation(sc.TimeZone); err != nil {
		return errs.Field(tzField, "%s: %q is not a known IANA time zone", tzField, sc.TimeZone)
	}

	switch sc.Overlap {
	case "":
		sc.Overlap = OverlapSkip
	case OverlapSkip, OverlapBufferOne, OverlapAllowAll:
	default:
		f := prefix + ".overlap"
		return errs.Field(f, "%s: %q is not one of %s, %s, %s", f, sc.Overlap, OverlapSkip, OverlapBufferOne, OverlapAllowAll)
	}
	return nil
}

// printable reports whether s is valid UTF-8 of printable characters only.
func printable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false
		}
	}
	return true
}

// fieldKey is a map key as it appears in a field path: as written, or
// quoted when it holds characters that would garble the path.
func fieldKey(k string) string {
	if printable(k) {
		return k
	}
	return strconv.Quote(k)
}

// sortedKeys returns m's keys in order, so the first error reported is
// the same on every call.
func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
