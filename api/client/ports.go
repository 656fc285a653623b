package client

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strconv"
	"sync"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/wire"
)

// PortConn is one TCP connection to a port inside a workspace, carried by
// the port-forward WebSocket (DialPort). It reads and writes bytes,
// half-closes with CloseWrite and ends with Close. Read and Write may be
// called from different goroutines.
type PortConn struct {
	conn *websocket.Conn
	ctx  context.Context
	stop context.CancelFunc

	rmu sync.Mutex
	cur io.Reader // the binary message being read
	eof bool
}

// portForwardChunk bounds one binary message DialPort's Write sends.
const portForwardChunk = 32 << 10

// DialPort connects to 127.0.0.1:port inside workspace wsID (GET
// /v1/workspaces/{id}/port-forward/{port}). Nothing listening there is an
// *Error with status 502; a workspace whose runtime predates tunnels 501.
func (c *Client) DialPort(ctx context.Context, wsID string, port int) (*PortConn, error) {
	path := "/v1/workspaces/" + seg(wsID) + "/port-forward/" + strconv.Itoa(port)
	conn, err := c.dialWebSocket(ctx, c.base+path, path)
	if err != nil {
		return nil, err
	}
	// The WebSocket lives past ctx (a dial's deadline); Close ends it.
	life, stop := context.WithCancel(context.WithoutCancel(ctx))
	conn.SetReadLimit(1 << 20)
	return &PortConn{conn: conn, ctx: life, stop: stop}, nil
}

// Read reads the bytes the program in the workspace sent; io.EOF once it
// shut its writing side.
func (p *PortConn) Read(b []byte) (int, error) {
	p.rmu.Lock()
	defer p.rmu.Unlock()
	for {
		if p.eof {
			return 0, io.EOF
		}
		if p.cur != nil {
			n, err := p.cur.Read(b)
			if errors.Is(err, io.EOF) {
				p.cur = nil
				err = nil
			}
			if n > 0 || err != nil {
				return n, err
			}
			continue
		}
		typ, r, err := p.conn.Reader(p.ctx)
		if err != nil {
			if websocket.CloseStatus(err) == websocket.StatusNormalClosure {
				p.eof = true
				continue
			}
			return 0, err
		}
		if typ == websocket.MessageText {
			msg, err := io.ReadAll(r)
			if err != nil {
				return 0, err
			}
			if string(msg) == wire.PortForwardEOF {
				p.eof = true
			}
			continue
		}
		p.cur = r
	}
}

// Write sends b to the program in the workspace.
func (p *PortConn) Write(b []byte) (int, error) {
	written := 0
	for len(b) > 0 {
		n := min(len(b), portForwardChunk)
		if err := p.conn.Write(p.ctx, websocket.MessageBinary, b[:n]); err != nil {
			return written, err
		}
		written += n
		b = b[n:]
	}
	return written, nil
}

// CloseWrite half-closes the connection: the program reads EOF once it
// has read what was written; reading goes on.
func (p *PortConn) CloseWrite() error {
	return p.conn.Write(p.ctx, websocket.MessageText, []byte(wire.PortForwardEOF))
}

// Close ends the connection.
func (p *PortConn) Close() error {
	defer p.stop()
	return p.conn.Close(websocket.StatusNormalClosure, "")
}

// ListPorts returns the TCP ports programs listen on inside workspace
// wsID, on loopback or any address (GET /v1/workspaces/{id}/ports); a
// workspace whose runtime predates the list is an *Error with status 501.
func (c *Client) ListPorts(ctx context.Context, wsID string) ([]protocol.ListeningPort, error) {
	return listInto[protocol.ListeningPort](ctx, c, "/v1/workspaces/"+seg(wsID)+"/ports", nil)
}

// CreatePreview makes a preview link to a port of workspace wsID (POST
// /v1/workspaces/{id}/previews): its URL opens the program in a browser
// with no key until it expires or is revoked.
func (c *Client) CreatePreview(ctx context.Context, wsID string, req wire.PreviewRequest) (*wire.PreviewLink, error) {
	return doInto[wire.PreviewLink](ctx, c, http.MethodPost, "/v1/workspaces/"+seg(wsID)+"/previews", nil, req)
}

// ListPreviews returns workspace wsID's live preview links, without URLs.
func (c *Client) ListPreviews(ctx context.Context, wsID string) ([]wire.Preview, error) {
	return listInto[wire.Preview](ctx, c, "/v1/workspaces/"+seg(wsID)+"/previews", nil)
}

// RevokePreview ends preview link id of workspace wsID at once.
func (c *Client) RevokePreview(ctx context.Context, wsID, id string) (*wire.Preview, error) {
	return doInto[wire.Preview](ctx, c, http.MethodDelete, "/v1/workspaces/"+seg(wsID)+"/previews/"+seg(id), nil, nil)
}
