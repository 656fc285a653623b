package client

import (
	"context"
	"errors"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// ListPorts returns the TCP ports programs listen on inside the sandbox,
// on loopback or any address (ports.list). A runtime that predates the op
// is an errs.Precondition error wrapping errors.ErrUnsupported.
func (c *Client) ListPorts(ctx context.Context) ([]protocol.ListeningPort, error) {
	var res protocol.PortsResult
	if err := c.do(ctx, &protocol.Request{Op: protocol.OpPortsList}, &res); err != nil {
		if unknownOp(err) {
			return nil, errs.E(errs.Precondition, "runtime %s: ports.list: the workspace's runtime predates listing ports (%w); recreate the workspace to get a current runtime", c.addr, errors.ErrUnsupported)
		}
		return nil, err
	}
	return res.Ports, nil
}
