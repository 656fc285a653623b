package console

import (
	"net/http"

	"github.com/primerhq/primer/api/client"
)

// snapshots lists the tenant's snapshots, newest first.
func (c *Console) snapshots(w http.ResponseWriter, r *http.Request, s *session) {
	ss, err := s.api.ListSnapshots(r.Context(), client.SnapshotListOptions{})
	if err != nil {
		c.fail(w, r, s, err)
		return
	}
	c.render(w, r, s, 0, "snapshots", page{Title: "Snapshots", Section: "workspaces", Tab: "snapshots", Data: ss})
}

// deleteSnapshot deletes a snapshot: it shows as deleting until its
// capture is removed, then is gone.
func (c *Console) deleteSnapshot(w http.ResponseWriter, r *http.Request, s *session) {
	if _, err := s.api.DeleteSnapshot(r.Context(), r.PathValue("id")); err != nil {
		c.fail(w, r, s, err)
		return
	}
	back(w, r, "/snapshots", "Snapshot "+r.PathValue("id")+" is being deleted.")
}
