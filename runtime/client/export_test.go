package client

import "time"

// SetWriteTimeout sets c's base write deadline (tests use a short one).
func SetWriteTimeout(c *Client, d time.Duration) { c.writeTimeout = d }

// SetOnWait sets the hook p calls when a Get waits for another token's dial.
func SetOnWait(p *Pool, f func(key string)) { p.onWait = f }
