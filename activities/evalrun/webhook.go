package evalrun

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/primerhq/primer/activities"
	"github.com/primerhq/primer/internal/outbound"
	"github.com/primerhq/primer/wire"
)

// EventRunFinished is the event a suite's webhook receives when a run ends.
const EventRunFinished = "run.finished"

// notifyRun POSTs a run's summary to its suite's webhook_url, once, within
// activities.WebhookTimeout. It is best effort: a receiver that is down or refuses
// is logged (by host only: the URL may carry a token) and the run ends
// all the same.
func (a *Activities) notifyRun(ctx context.Context, run *wire.Run, out FinishRunOutput) {
	ss, err := runSpec(run)
	if err != nil || ss.WebhookURL == "" {
		return
	}
	target := ss.WebhookURL
	host := "(unparsable url)"
	if u, err := url.Parse(target); err == nil {
		host = u.Scheme + "://" + u.Host
	}
	final := out.Pass + out.Fail + out.Error
	rate := 0.0
	if final > 0 {
		rate = float64(out.Pass) / float64(final)
	}
	body, err := json.Marshal(map[string]any{
		"event":        EventRunFinished,
		"run_id":       run.ID,
		"suite_id":     run.SuiteID,
		"status":       out.Status,
		"reason":       run.Reason,
		"trigger":      run.Trigger,
		"triggered_by": run.TriggeredBy,
		"total":        out.Total,
		"pass":         out.Pass,
		"fail":         out.Fail,
		"error":        out.Error,
		"canceled":     out.Canceled,
		"pass_rate":    rate,
		"time":         time.Now().UTC().Format(time.RFC3339Nano),
	})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(ctx, activities.WebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		a.logger().Warn("run webhook: bad request", "run_id", run.ID, "host", host)
		return
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("User-Agent", "primer")
	resp, err := a.outboundClient().Do(req)
	if err != nil && outbound.IsRefused(err) {
		a.logger().Warn("run webhook: refused by the outbound policy", "run_id", run.ID, "host", host)
		return
	}
	if err != nil {
		// The client's error quotes the whole URL: say only the host.
		a.logger().Warn("run webhook: not delivered", "run_id", run.ID, "host", host)
		return
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode >= 300 {
		a.logger().Warn("run webhook: refused", "run_id", run.ID, "host", host, "status", resp.StatusCode)
		return
	}
	a.logger().Info("run webhook delivered", "run_id", run.ID, "host", host, "status", resp.StatusCode)
}
