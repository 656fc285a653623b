package kubernetes

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"io"
	"time"

	"github.com/primerhq/primer/backend/container"
)

// RuntimeImageRepo is the repository of the default runtime image; its tag
// is the first 12 hex digits of the runtime binary's SHA-256, so a new
// platform version names a new image and a node never runs a stale one.
const RuntimeImageRepo = "primer/runtime"

// DefaultRuntimeImage is the runtime image a provider without runtime_image
// uses: primer/runtime:<digest>.
func DefaultRuntimeImage(bin *container.RuntimeBinary) (string, error) {
	digest, err := bin.Digest()
	if err != nil {
		return "", err
	}
	return RuntimeImageRepo + ":" + digest[:12], nil
}

// WriteRuntimeImage writes the runtime image named ref as a docker-archive
// tarball (what `docker load`, `ctr images import` and `podman load` read):
// one layer holding .primer/primer-runtime, and nothing else. Push it to the
// cluster's registry, or import it on the nodes; the init container of each
// workspace pod runs `primer-runtime install` from it.
func WriteRuntimeImage(w io.Writer, bin *container.RuntimeBinary, ref string) error {
	layerR, err := bin.Tar()
	if err != nil {
		return err
	}
	layer, err := io.ReadAll(layerR)
	if err != nil {
		return err
	}
	layerSum := sha256.Sum256(layer)
	layerHex := hex.EncodeToString(layerSum[:])
	config, err := json.Marshal(map[string]any{
		"architecture": "amd64",
		"os":           "linux",
		"created":      "1970-01-01T00:00:00Z",
		"config":       map[string]any{"Entrypoint": []string{RuntimePath}},
		"rootfs":       map[string]any{"type": "layers", "diff_ids": []string{"sha256:" + layerHex}},
	})
	if err != nil {
		return err
	}
	configSum := sha256.Sum256(config)
	configName := hex.EncodeToString(configSum[:]) + ".json"
	manifest, err := json.Marshal([]map[string]any{{
		"Config":   configName,
		"RepoTags": []string{ref},
		"Layers":   []string{layerHex + "/layer.tar"},
	}})
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	epoch := time.Unix(0, 0)
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: layerHex + "/", Mode: 0o755, ModTime: epoch}); err != nil {
		return err
	}
	for _, f := range []struct {
		name string
		data []byte
	}{{layerHex + "/layer.tar", layer}, {configName, config}, {"manifest.json", manifest}} {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.name, Mode: 0o644, Size: int64(len(f.data)), ModTime: epoch}); err != nil {
			return err
		}
		if _, err := io.Copy(tw, bytes.NewReader(f.data)); err != nil {
			return err
		}
	}
	return tw.Close()
}
