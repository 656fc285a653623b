package server

import (
	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// shutdownServer answers the shutdown op, then makes ListenAndServe stop
// the runtime as SIGTERM would: every connection closed (this one too),
// every process the runtime started killed, the listener closed, the
// process exiting. The answer goes first, on the read loop, so the client
// sees it before its connection closes.
//
// The platform sends it when it deletes the workspace for good: a
// Kubernetes pod's runtime then stops within milliseconds, where the
// kubelet may first wait up to a second for its next look at the node's
// containers before it sends SIGTERM. A runtime embedded in another
// process (the local backend serves it inside the platform) has no
// process of its own to stop: it refuses, and its owner stops it.
func (c *conn) shutdownServer(req *protocol.Request) {
	if !c.s.ownProcess.Load() {
		c.reply(req.ID, nil, errs.E(errs.Invalid, "shutdown: this runtime is served inside another process, which stops it"))
		return
	}
	c.s.log.Info("runtime: shutdown requested")
	c.reply(req.ID, protocol.ShutdownResult{}, nil)
	c.s.stopOnce.Do(func() { close(c.s.stop) })
}
