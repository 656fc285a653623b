// Package recorder records the workflow histories that the workflows
// package's replay test replays (workflows/testdata/*.json). It has no code
// outside its test: run
//
//	make record-histories   (PRIMER_RECORD_HISTORY=1 go test -tags record ./workflows/recorder/)
//
// to run each scripted lifecycle against an embedded Temporal server and
// write its history. It lives apart from package workflows so that the
// workflow tests do not link the Temporal server.
package recorder
