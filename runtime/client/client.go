// Package client is the platform's side of the runtime protocol: one
// persistent WebSocket per workspace runtime, shared by concurrent calls.
package client

import (
	"context"
	"io"
	"os"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/protocol"
)

// Client is a connection to one runtime. It is safe for concurrent use.
type Client struct {
	done chan struct{}
}

var errTODO = errs.E(errs.Unavailable, "runtime client: not implemented yet")

// Dial connects to the runtime at url (ws:// or wss://) with token.
func Dial(ctx context.Context, url, token string) (*Client, error) { return nil, errTODO }

// Ping checks the runtime answers.
func (c *Client) Ping(ctx context.Context) error { return errTODO }

// ReadFile returns the content of path.
func (c *Client) ReadFile(ctx context.Context, path string) ([]byte, error) { return nil, errTODO }

// WriteFile writes data to path, creating parent directories.
func (c *Client) WriteFile(ctx context.Context, path string, data []byte, mode os.FileMode) error {
	return errTODO
}

// Stat describes path.
func (c *Client) Stat(ctx context.Context, path string) (protocol.FileInfo, error) {
	return protocol.FileInfo{}, errTODO
}

// List returns the entries of directory path.
func (c *Client) List(ctx context.Context, path string) ([]protocol.FileInfo, error) {
	return nil, errTODO
}

// Remove deletes path.
func (c *Client) Remove(ctx context.Context, path string, recursive bool) error { return errTODO }

// Mkdir creates directory path.
func (c *Client) Mkdir(ctx context.Context, path string, parents bool) error { return errTODO }

// Rename moves from to to.
func (c *Client) Rename(ctx context.Context, from, to string) error { return errTODO }

// Exec runs a command to completion.
func (c *Client) Exec(ctx context.Context, req protocol.ExecRequest, stdout, stderr io.Writer) (protocol.ExecResult, error) {
	return protocol.ExecResult{}, errTODO
}

// StartOptions says where a started process's output goes.
type StartOptions struct {
	Stdout, Stderr io.Writer
}

// Process is a command started with Start.
type Process struct{}

// Start starts a command.
func (c *Client) Start(ctx context.Context, req protocol.ExecRequest, opts ...StartOptions) (*Process, error) {
	return nil, errTODO
}

// Stdin returns the process's standard input.
func (p *Process) Stdin() io.WriteCloser { return nil }

// Wait waits for the process to end.
func (p *Process) Wait() (protocol.ExecResult, error) { return protocol.ExecResult{}, errTODO }

// Close closes the connection.
func (c *Client) Close() error { return nil }

// Done is closed when the connection dies.
func (c *Client) Done() <-chan struct{} { return c.done }

// Pool keeps one client per key.
type Pool struct{}

// NewPool returns an empty pool.
func NewPool() *Pool { return &Pool{} }

// Get returns the live client for key, dialing when needed.
func (p *Pool) Get(ctx context.Context, key, url, token string) (*Client, error) {
	return nil, errTODO
}

// Drop closes and forgets the client for key.
func (p *Pool) Drop(key string) {}

// Close closes every client.
func (p *Pool) Close() {}
