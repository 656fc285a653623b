package local

// CgroupBase is cgroupBase, for tests that need to know whether the host
// has a writable cgroup v2.
var CgroupBase = cgroupBase
