package container

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"

	cerrdefs "github.com/containerd/errdefs"
	dcontainer "github.com/docker/docker/api/types/container"
	"github.com/docker/docker/api/types/image"
	dnetwork "github.com/docker/docker/api/types/network"
	"github.com/docker/docker/api/types/volume"
	dclient "github.com/docker/docker/client"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"

	"github.com/primerhq/primer/errs"
)

// engine is the part of the Docker engine API (which Podman serves too)
// that the backend calls, and nothing more: *dclient.Client implements it,
// and the unit tests give a fake one to reach the error paths a live engine
// does not produce on demand.
type engine interface {
	ImageInspect(ctx context.Context, imageID string, opts ...dclient.ImageInspectOption) (image.InspectResponse, error)
	ImageList(ctx context.Context, options image.ListOptions) ([]image.Summary, error)
	ImageRemove(ctx context.Context, imageID string, options image.RemoveOptions) ([]image.DeleteResponse, error)

	ContainerCreate(ctx context.Context, config *dcontainer.Config, hostConfig *dcontainer.HostConfig, networkingConfig *dnetwork.NetworkingConfig, platform *ocispec.Platform, containerName string) (dcontainer.CreateResponse, error)
	ContainerStart(ctx context.Context, containerID string, options dcontainer.StartOptions) error
	ContainerInspect(ctx context.Context, containerID string) (dcontainer.InspectResponse, error)
	ContainerLogs(ctx context.Context, containerID string, options dcontainer.LogsOptions) (io.ReadCloser, error)
	ContainerList(ctx context.Context, options dcontainer.ListOptions) ([]dcontainer.Summary, error)
	ContainerRemove(ctx context.Context, containerID string, options dcontainer.RemoveOptions) error
	ContainerWait(ctx context.Context, containerID string, condition dcontainer.WaitCondition) (<-chan dcontainer.WaitResponse, <-chan error)
	ContainerStop(ctx context.Context, containerID string, options dcontainer.StopOptions) error
	CopyToContainer(ctx context.Context, containerID, dstPath string, content io.Reader, options dcontainer.CopyToContainerOptions) error
	ContainerDiff(ctx context.Context, containerID string) ([]dcontainer.FilesystemChange, error)
	ContainerCommit(ctx context.Context, containerID string, options dcontainer.CommitOptions) (dcontainer.CommitResponse, error)

	VolumeCreate(ctx context.Context, options volume.CreateOptions) (volume.Volume, error)
	VolumeInspect(ctx context.Context, volumeID string) (volume.Volume, error)
	VolumeList(ctx context.Context, options volume.ListOptions) (volume.ListResponse, error)
	VolumeRemove(ctx context.Context, volumeID string, force bool) error

	NetworkList(ctx context.Context, options dnetwork.ListOptions) ([]dnetwork.Summary, error)
	NetworkInspect(ctx context.Context, networkID string, options dnetwork.InspectOptions) (dnetwork.Inspect, error)
	NetworkCreate(ctx context.Context, name string, options dnetwork.CreateOptions) (dnetwork.CreateResponse, error)
	NetworkRemove(ctx context.Context, networkID string) error

	Close() error
}

var _ engine = (*dclient.Client)(nil)

func newClient(c Connection) (*dclient.Client, error) {
	opts := []dclient.Opt{dclient.WithAPIVersionNegotiation()}
	switch c.Kind {
	case ConnSocket:
		opts = append(opts, dclient.WithHost("unix://"+c.SocketPath))
	case ConnTCP:
		if c.TLS != nil {
			// The HTTP client comes first: WithHost configures its
			// transport's dialling, and a transport with a TLS config
			// makes the engine client speak https.
			tc, err := tlsConfig(c.TLS)
			if err != nil {
				return nil, err
			}
			opts = append(opts, dclient.WithHTTPClient(tlsClient(tc)))
		}
		opts = append(opts, dclient.WithHost("tcp://"+c.Host))
	}
	cli, err := dclient.NewClientWithOpts(opts...)
	if err != nil {
		return nil, errs.Field("spec.config.connection", "spec.config.connection: %v", err)
	}
	return cli, nil
}

// Client returns the engine client (tests inspect what the backend made),
// or nil for a backend on a fake engine.
func (b *Backend) Client() *dclient.Client {
	c, _ := b.cli.(*dclient.Client)
	return c
}

// Close implements backend.Closer: it releases the engine client's
// connections. Containers and volumes stay with their workspaces.
func (b *Backend) Close() error { return b.cli.Close() }

// engineErr wraps an engine error with what was being done and the errs
// kind the workflow needs: a missing image or object is NotFound (not
// retried), an engine that does not answer is Unavailable (retried), a bad
// request is Invalid.
func (b *Backend) engineErr(err error, format string, args ...any) error {
	msg := fmt.Sprintf(format, args...)
	engine := b.cfg.Runtime
	switch {
	case dclient.IsErrConnectionFailed(err) || isDialError(err):
		return errs.E(errs.Unavailable, "%s: %s engine is not reachable at %s: %w", msg, engine, b.where(), err)
	case errors.Is(err, context.DeadlineExceeded):
		return errs.E(errs.Timeout, "%s: %s engine: %w", msg, engine, err)
	case errors.Is(err, context.Canceled):
		return errs.E(errs.Canceled, "%s: %w", msg, err)
	case cerrdefs.IsNotFound(err):
		return errs.E(errs.NotFound, "%s: %s engine: %w", msg, engine, err)
	case cerrdefs.IsConflict(err):
		return errs.E(errs.Conflict, "%s: %s engine: %w", msg, engine, err)
	case cerrdefs.IsInvalidArgument(err):
		return errs.E(errs.Invalid, "%s: %s engine: %w", msg, engine, err)
	case cerrdefs.IsPermissionDenied(err) || cerrdefs.IsUnauthorized(err):
		return errs.E(errs.Forbidden, "%s: %s engine: %w", msg, engine, err)
	}
	return errs.E(errs.Unavailable, "%s: %s engine: %w", msg, engine, err)
}

func isDialError(err error) bool {
	var op *net.OpError
	return errors.As(err, &op) && op.Op == "dial"
}

func (b *Backend) where() string {
	if b.cfg.Connection.Kind == ConnSocket {
		return b.cfg.Connection.SocketPath
	}
	return b.cfg.Connection.Host
}
