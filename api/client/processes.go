package client

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"github.com/coder/websocket"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/wire"
)

func processesPath(wsID string) string {
	return "/v1/workspaces/" + seg(wsID) + "/processes"
}

func processPath(wsID string, pid int) string {
	return processesPath(wsID) + "/" + strconv.Itoa(pid)
}

// StartProcess starts a process in workspace wsID that outlives the call
// (a background command, or a terminal with spec.PTY) and returns it, with
// its pid, once it runs.
func (c *Client) StartProcess(ctx context.Context, wsID string, spec wire.ProcessSpec) (*wire.Process, error) {
	var out wire.Process
	if err := c.doJSON(ctx, http.MethodPost, processesPath(wsID), nil, spec, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ListProcesses returns the workspace's running processes and those that
// ended recently.
func (c *Client) ListProcesses(ctx context.Context, wsID string) ([]wire.Process, error) {
	var out wire.ProcessList
	if err := c.doJSON(ctx, http.MethodGet, processesPath(wsID), nil, nil, &out); err != nil {
		return nil, err
	}
	return out.Items, nil
}

// GetProcess returns process pid of the workspace.
func (c *Client) GetProcess(ctx context.Context, wsID string, pid int) (*wire.Process, error) {
	var out wire.Process
	if err := c.doJSON(ctx, http.MethodGet, processPath(wsID, pid), nil, nil, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ProcessInput writes data to the stdin or terminal of process pid.
func (c *Client) ProcessInput(ctx context.Context, wsID string, pid int, data string) error {
	return c.doJSON(ctx, http.MethodPost, processPath(wsID, pid)+"/input", nil, wire.ProcessInput{Data: data}, nil)
}

// SignalProcess sends a signal ("TERM", "SIGKILL") to process pid's group.
func (c *Client) SignalProcess(ctx context.Context, wsID string, pid int, signal string) error {
	return c.doJSON(ctx, http.MethodPost, processPath(wsID, pid)+"/signal", nil, wire.ProcessSignal{Signal: signal}, nil)
}

// ResizeProcess sets the terminal size of process pid.
func (c *Client) ResizeProcess(ctx context.Context, wsID string, pid, cols, rows int) error {
	return c.doJSON(ctx, http.MethodPost, processPath(wsID, pid)+"/resize", nil, wire.TerminalSize{Cols: cols, Rows: rows}, nil)
}

// CloseProcessStdin closes the stdin of process pid.
func (c *Client) CloseProcessStdin(ctx context.Context, wsID string, pid int) error {
	return c.doJSON(ctx, http.MethodPost, processPath(wsID, pid)+"/close-stdin", nil, struct{}{}, nil)
}

// Attachment is an open attach stream of a process (AttachProcess): Recv
// returns its output and, last, its exit; Input, Resize, Signal and
// CloseStdin act on the process. Close detaches; the process runs on.
type Attachment struct {
	conn *websocket.Conn
	mu   sync.Mutex // serialises writes
}

// AttachOptions tunes AttachProcess.
type AttachOptions struct {
	// Replay delivers the process's recent output (its last 16 KiB: a
	// terminal's screen, a prompt) before the new.
	Replay bool
}

// AttachProcess opens the attach stream of process pid: its output from
// now on, then its exit. Refusals (unknown pid, a viewer key) are *Error
// as for any call.
func (c *Client) AttachProcess(ctx context.Context, wsID string, pid int, opts AttachOptions) (*Attachment, error) {
	u := c.base + processPath(wsID, pid) + "/attach"
	if opts.Replay {
		u += "?replay=true"
	}
	conn, err := c.dialWebSocket(ctx, u, processPath(wsID, pid)+"/attach")
	if err != nil {
		return nil, err
	}
	conn.SetReadLimit(64 << 20)
	return &Attachment{conn: conn}, nil
}

// dialWebSocket opens the WebSocket at u (an http or https URL of this
// server) with the client's key; a refusal before the upgrade is *Error
// as for any call, what names the route in other errors.
func (c *Client) dialWebSocket(ctx context.Context, u, what string) (*websocket.Conn, error) {
	if rest, ok := strings.CutPrefix(u, "http"); ok {
		u = "ws" + rest // http -> ws, https -> wss
	}
	h := http.Header{}
	if c.token != "" {
		h.Set("Authorization", "Bearer "+c.token)
	}
	if c.userAgent != "" {
		h.Set("User-Agent", c.userAgent)
	}
	hc := c.stream
	if tr, ok := hc.Transport.(*http.Transport); ok && tr.ForceAttemptHTTP2 {
		// An upgrade needs HTTP/1.1.
		tr = tr.Clone()
		tr.ForceAttemptHTTP2 = false
		tr.TLSNextProto = map[string]func(string, *tls.Conn) http.RoundTripper{}
		hc = &http.Client{Transport: tr, Jar: hc.Jar}
	}
	conn, resp, err := websocket.Dial(ctx, u, &websocket.DialOptions{HTTPClient: hc, HTTPHeader: h, CompressionMode: websocket.CompressionDisabled})
	if err != nil {
		if resp != nil && resp.StatusCode >= 300 {
			return nil, decodeError(resp)
		}
		return nil, wrap(errs.Unavailable, err, "GET %s", what)
	}
	return conn, nil
}

// Recv returns the next message from the server: output, an error about a
// refused message, or the exit (the last one).
func (a *Attachment) Recv(ctx context.Context) (wire.AttachMessage, error) {
	var m wire.AttachMessage
	_, data, err := a.conn.Read(ctx)
	if err != nil {
		return m, wrap(errs.Unavailable, err, "attach: read")
	}
	if err := json.Unmarshal(data, &m); err != nil {
		return m, wrap(errs.Other, err, "attach: malformed message")
	}
	return m, nil
}

// Send writes one message to the server.
func (a *Attachment) Send(ctx context.Context, m wire.AttachMessage) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.conn.Write(ctx, websocket.MessageText, b); err != nil {
		return wrap(errs.Unavailable, err, "attach: write")
	}
	return nil
}

// Input sends data to the process's stdin or terminal.
func (a *Attachment) Input(ctx context.Context, data []byte) error {
	return a.Send(ctx, wire.AttachMessage{Type: wire.AttachInput, Data: data})
}

// Resize sets the process's terminal size.
func (a *Attachment) Resize(ctx context.Context, cols, rows int) error {
	return a.Send(ctx, wire.AttachMessage{Type: wire.AttachResize, Cols: cols, Rows: rows})
}

// Close ends the stream; the process runs on.
func (a *Attachment) Close() error {
	return a.conn.Close(websocket.StatusNormalClosure, "detach")
}
