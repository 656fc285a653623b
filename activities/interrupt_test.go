package activities

import (
	"context"
	"errors"
	"testing"
)

// A step cut short by its cancellation returns the cancellation, so the
// SDK reports it cancelled; any other error stays as it is.
func TestInterrupted(t *testing.T) {
	boom := errors.New("workspace ws-1: provision: boom")
	cancelled, cancel := context.WithCancel(context.Background())
	cancel()
	expired, cancel2 := context.WithTimeout(context.Background(), 0)
	defer cancel2()
	tests := []struct {
		name string
		ctx  context.Context
		err  error
		want error
	}{
		{"no error", cancelled, nil, nil},
		{"running", context.Background(), boom, boom},
		{"cancelled", cancelled, boom, context.Canceled},
		{"deadline is not a cancellation", expired, boom, boom},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := interrupted(tt.ctx, tt.err); !errors.Is(got, tt.want) || (tt.want == nil && got != nil) {
				t.Errorf("interrupted = %v, want %v", got, tt.want)
			}
		})
	}
}
