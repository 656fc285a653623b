package starter

import (
	"encoding/json"

	"github.com/primerhq/primer/activities"
)

// templateLimits is activities.TemplateLimits: the limits a create records
// are read the way provisioning reads them again.
func templateLimits(doc json.RawMessage) (cpu float64, mem int64) {
	return activities.TemplateLimits(doc)
}
