package backend

import (
	"context"
	"errors"
	"time"

	"github.com/primerhq/primer/errs"
	"github.com/primerhq/primer/runtime/client"
)

// ErrTokenRefused is what AwaitRuntime returns when the runtime answers but
// refuses the token: it belongs to another start of the workspace.
var ErrTokenRefused = errors.New("runtime refused the workspace's token")

// AwaitRuntime dials the runtime at url until it answers a ping with token,
// giving each try dialTimeout and waiting between tries from 5 ms, 5 ms more
// each time up to 50 ms for its first second (a runtime starts in tens of
// milliseconds: a doubling wait found it up to 80 ms late), then doubling
// up to 200 ms. Between tries it runs stopped, when given, and returns its
// error: the sandbox died while starting and no wait will help. When ctx
// ends it returns the last try's error; the caller tells that case by its
// own ctx.Err().
func AwaitRuntime(ctx context.Context, url, token string, dialTimeout time.Duration, stopped func(context.Context) error) error {
	delay, start := 5*time.Millisecond, time.Now()
	for {
		dctx, dcancel := context.WithTimeout(ctx, dialTimeout)
		c, err := client.Dial(dctx, url, token)
		if err == nil {
			err = c.Ping(dctx)
			c.Close()
		}
		dcancel()
		if err == nil {
			return nil
		}
		if errs.KindOf(err) == errs.Forbidden {
			return ErrTokenRefused
		}
		if stopped != nil {
			if serr := stopped(ctx); serr != nil {
				return serr
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(delay):
		}
		if time.Since(start) < time.Second {
			delay = min(delay+5*time.Millisecond, 50*time.Millisecond)
		} else {
			delay = min(2*delay, 200*time.Millisecond)
		}
	}
}
