package activities

import (
	"encoding/json"

	"k8s.io/apimachinery/pkg/api/resource"
)

// TemplateLimits returns the CPU cores and memory bytes a template's
// backend document limits a workspace to (0: no limit), which the tenant's
// quotas add up. The container backend names them cpu_cores and
// memory_bytes; the kubernetes backend cpu_limit and memory_limit, as
// Kubernetes quantities; the vm backend cpu (cores) and memory (a quantity). The document is read generically, so the
// starter and the activities need no backend's config types; it was validated when stored,
// and a value that does not parse counts as no limit (which a tenant with
// that quota refuses).
func TemplateLimits(doc json.RawMessage) (cpu float64, mem int64) {
	var d struct {
		CPUCores    float64 `json:"cpu_cores"`
		MemoryBytes int64   `json:"memory_bytes"`
		CPULimit    string  `json:"cpu_limit"`
		MemoryLimit string  `json:"memory_limit"`
		CPU         float64 `json:"cpu"`
		Memory      string  `json:"memory"`
	}
	if len(doc) == 0 || json.Unmarshal(doc, &d) != nil {
		return 0, 0
	}
	cpu, mem = d.CPUCores, d.MemoryBytes
	if cpu == 0 {
		cpu = d.CPU
	}
	if d.MemoryLimit == "" {
		d.MemoryLimit = d.Memory
	}
	if q, err := resource.ParseQuantity(d.CPULimit); cpu == 0 && d.CPULimit != "" && err == nil {
		cpu = float64(q.MilliValue()) / 1000
	}
	if q, err := resource.ParseQuantity(d.MemoryLimit); mem == 0 && d.MemoryLimit != "" && err == nil {
		mem = q.Value()
	}
	return max(cpu, 0), max(mem, 0)
}
