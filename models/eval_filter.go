package models

// RunFilter selects runs in ListRuns, newest first. Empty fields match all.
type RunFilter struct {
	// TenantID limits the list to one tenant's runs; empty: all.
	TenantID string
	SuiteID  string
	Status   string
	Limit    int // 0: no limit
}

// RunCounts counts a run's cases by status and verdict.
type RunCounts struct {
	Total, Pending, Running, Pass, Fail, Error, Canceled int
}
