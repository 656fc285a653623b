package client

import "time"

// SetWriteTimeout sets c's base write deadline (tests use a short one).
func SetWriteTimeout(c *Client, d time.Duration) { c.writeTimeout = d }
