// Command primer-runtime is the server that runs inside every workspace: it
// serves file operations and command execution over one authenticated
// WebSocket per client. See runtime/PROTOCOL.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"

	"github.com/primerhq/primer/runtime/egress"
	"github.com/primerhq/primer/runtime/protocol"
	"github.com/primerhq/primer/runtime/server"
)

func main() {
	if len(os.Args) > 1 && os.Args[1] == "install" {
		// An init container of a Kubernetes workspace pod copies the
		// runtime into a volume the workspace's container then runs it
		// from; it is PID 1 there too, so this comes first.
		if err := install(os.Args[2:]); err != nil {
			fmt.Fprintln(os.Stderr, "primer-runtime install:", err)
			os.Exit(1)
		}
		return
	}
	if len(os.Args) > 1 && os.Args[1] == "changes" {
		// A Kubernetes workspace's reset asks what changed outside the
		// workspace (changes.go).
		if err := changes(os.Args[2:], os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, "primer-runtime changes:", err)
			os.Exit(1)
		}
		return
	}
	if os.Getpid() == 1 {
		// As a container's entrypoint the runtime is PID 1 and inherits
		// every orphan the workspace's commands leave behind.
		os.Exit(runAsInit())
	}
	if err := run(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return
		}
		fmt.Fprintln(os.Stderr, "primer-runtime:", err)
		os.Exit(1)
	}
}

// Values of --egress.
const (
	egressAllow = "allow"
	egressDeny  = "deny"
	// egressApplied is internal: init passes it to its child once it has
	// locked the network down, which the child, without the capabilities
	// it needs, could not redo.
	egressApplied = "applied"
)

// Values of --ingress.
const (
	ingressAllow    = "allow"
	ingressRestrict = "restrict"
	// ingressApplied is internal, like egressApplied.
	ingressApplied = "applied"
)

// config is the command line.
type config struct {
	listen, root string
	// fsMode is protocol.FSRoot or protocol.FSWhole (server.Config.FS).
	fsMode string
	// user is the default user of commands and created files
	// (server.Config.User).
	user string
	// tokenFile, when set, names a file holding the token instead of
	// PRIMER_RUNTIME_TOKEN; the runtime removes it once read (a vm
	// workspace's launcher, which must keep the token out of argv and of
	// the environment other processes of the host can see).
	tokenFile string
	debug     bool
	egress    string
	ingress   string
	// ingressAllow and ingressExcept are the comma-separated prefixes
	// --ingress=restrict admits besides the runtime's port, and those it
	// drops among them (kept strings so config stays comparable).
	ingressAllow, ingressExcept string
	// killAll is internal: init sets it for its child, the one process
	// for which kill(-1) means "every other process of this container".
	killAll bool
}

// parseFlags reads the command line, with defaults from the environment.
func parseFlags(args []string) (config, error) {
	var c config
	fs := flag.NewFlagSet("primer-runtime", flag.ContinueOnError)
	fs.StringVar(&c.listen, "listen", envOr("PRIMER_RUNTIME_LISTEN", ":7777"), "address to listen on (PRIMER_RUNTIME_LISTEN)")
	fs.StringVar(&c.root, "root", envOr("PRIMER_RUNTIME_ROOT", "/workspace"), "workspace directory (PRIMER_RUNTIME_ROOT)")
	fs.StringVar(&c.fsMode, "fs", envOr("PRIMER_RUNTIME_FS", protocol.FSRoot),
		"root: every path stays inside --root; whole: absolute paths reach the whole sandbox and users may be added, for a runtime that owns its container, pod or machine (PRIMER_RUNTIME_FS)")
	fs.StringVar(&c.user, "user", os.Getenv("PRIMER_RUNTIME_USER"),
		"the sandbox user commands run as and created files belong to when a request names none; with --fs=whole created at start when missing (PRIMER_RUNTIME_USER)")
	fs.StringVar(&c.tokenFile, "token-file", "", "read the token from this file, then remove it (instead of "+server.TokenEnv+")")
	fs.BoolVar(&c.debug, "debug", os.Getenv("PRIMER_RUNTIME_DEBUG") != "", "log connections (PRIMER_RUNTIME_DEBUG)")
	fs.StringVar(&c.egress, "egress", envOr("PRIMER_RUNTIME_EGRESS", egressAllow),
		"allow, or deny to drop every connection the workspace opens; needs CAP_NET_ADMIN and CAP_SETPCAP, which it then drops (PRIMER_RUNTIME_EGRESS)")
	fs.StringVar(&c.ingress, "ingress", envOr("PRIMER_RUNTIME_INGRESS", ingressAllow),
		"allow, or restrict to drop every connection opened towards the workspace but to the runtime's port and from --ingress-allow; needs CAP_NET_ADMIN and CAP_SETPCAP, which it then drops (PRIMER_RUNTIME_INGRESS)")
	fs.StringVar(&c.ingressAllow, "ingress-allow", os.Getenv("PRIMER_RUNTIME_INGRESS_ALLOW"),
		"comma-separated CIDR prefixes --ingress=restrict admits: the workspace's peers (PRIMER_RUNTIME_INGRESS_ALLOW)")
	fs.StringVar(&c.ingressExcept, "ingress-except", os.Getenv("PRIMER_RUNTIME_INGRESS_EXCEPT"),
		"comma-separated CIDR prefixes --ingress=restrict drops although --ingress-allow holds them: the network's gateway (PRIMER_RUNTIME_INGRESS_EXCEPT)")
	fs.BoolVar(&c.killAll, "reset-kill-all", false,
		"internal, set by init for its child: reset also kills every other process of the container")
	if err := fs.Parse(args); err != nil {
		return config{}, err
	}
	if fs.NArg() > 0 {
		return config{}, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	switch c.fsMode {
	case protocol.FSRoot, protocol.FSWhole:
	default:
		return config{}, fmt.Errorf("--fs %q: want %s or %s", c.fsMode, protocol.FSRoot, protocol.FSWhole)
	}
	switch c.egress {
	case egressAllow, egressDeny, egressApplied:
	default:
		return config{}, fmt.Errorf("--egress %q: want %s or %s", c.egress, egressAllow, egressDeny)
	}
	switch c.ingress {
	case ingressAllow, ingressRestrict, ingressApplied:
	default:
		return config{}, fmt.Errorf("--ingress %q: want %s or %s", c.ingress, ingressAllow, ingressRestrict)
	}
	if _, err := parsePrefixes("--ingress-allow", c.ingressAllow); err != nil {
		return config{}, err
	}
	if _, err := parsePrefixes("--ingress-except", c.ingressExcept); err != nil {
		return config{}, err
	}
	if _, err := listenPort(c.listen); err != nil {
		return config{}, err
	}
	return c, nil
}

// parsePrefixes reads a list of prefixes given to flag.
func parsePrefixes(flag, list string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, s := range strings.Split(list, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		p, err := netip.ParsePrefix(s)
		if err != nil {
			return nil, fmt.Errorf("%s %q: %w", flag, s, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// listenPort is the TCP port of --listen, which --ingress=restrict keeps
// open for the platform.
func listenPort(listen string) (uint16, error) {
	_, port, err := net.SplitHostPort(listen)
	if err != nil {
		return 0, fmt.Errorf("--listen %q: %w", listen, err)
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return 0, fmt.Errorf("--listen %q: port: %w", listen, err)
	}
	return uint16(p), nil
}

// args is the command line that parses back to c.
func (c config) args() []string {
	args := []string{
		"--listen=" + c.listen,
		"--root=" + c.root,
		"--debug=" + strconv.FormatBool(c.debug),
		"--egress=" + c.egress,
	}
	if c.fsMode != protocol.FSRoot {
		args = append(args, "--fs="+c.fsMode)
	}
	if c.user != "" {
		args = append(args, "--user="+c.user)
	}
	if c.ingress != ingressAllow {
		args = append(args, "--ingress="+c.ingress)
	}
	if c.ingressAllow != "" {
		args = append(args, "--ingress-allow="+c.ingressAllow)
	}
	if c.ingressExcept != "" {
		args = append(args, "--ingress-except="+c.ingressExcept)
	}
	if c.tokenFile != "" {
		args = append(args, "--token-file="+c.tokenFile)
	}
	if c.killAll {
		args = append(args, "--reset-kill-all")
	}
	return args
}

// lockdown hides the process's environment (where the token is) and memory
// from the commands it will run; for egress deny it closes the network to
// connections the workspace opens, for ingress restrict to connections
// opened towards it, and then drops the capabilities that could reopen
// them. An error must stop the runtime: a workspace asked to deny egress or
// restrict ingress never runs with it open.
func lockdown(c config) error {
	if err := egress.SetNotDumpable(); err != nil && !errors.Is(err, errors.ErrUnsupported) {
		return err
	}
	if c.egress != egressDeny && c.ingress != ingressRestrict {
		return nil
	}
	if c.egress == egressDeny {
		if err := egress.Deny(); err != nil {
			return err
		}
	}
	if c.ingress == ingressRestrict {
		port, err := listenPort(c.listen)
		if err != nil {
			return err
		}
		allow, err := parsePrefixes("--ingress-allow", c.ingressAllow)
		if err != nil {
			return err
		}
		except, err := parsePrefixes("--ingress-except", c.ingressExcept)
		if err != nil {
			return err
		}
		if err := egress.Restrict(port, allow, except); err != nil {
			return err
		}
	}
	return egress.DropCaps(egress.CapNetAdmin, egress.CapSetPCAP)
}

func run(args []string) error {
	c, err := parseFlags(args)
	if err != nil {
		return err
	}
	// kill(-1) from a host process would kill everything its user runs:
	// only init's child, whose parent is PID 1, may have it.
	if c.killAll && os.Getppid() != 1 {
		return errors.New("--reset-kill-all is internal: only the child of primer-runtime running as PID 1 takes it")
	}
	token, err := readToken(c.tokenFile)
	if err != nil {
		return err
	}
	// Commands must not inherit the token through the runtime's own
	// environment either.
	_ = os.Unsetenv(server.TokenEnv)
	if err := lockdown(c); err != nil {
		return err
	}

	level := slog.LevelInfo
	if c.debug {
		level = slog.LevelDebug
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
	s, err := server.New(server.Config{Root: c.root, FS: c.fsMode, User: c.user, Token: token, Logger: log, Env: commandEnv(), KillAllOnReset: c.killAll})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return server.ListenAndServe(ctx, c.listen, s)
}

// readToken returns the token from file (removed once read) or, without
// one, from the environment.
func readToken(file string) (string, error) {
	if file == "" {
		token := os.Getenv(server.TokenEnv)
		if token == "" {
			return "", fmt.Errorf("%s is required (or --token-file)", server.TokenEnv)
		}
		return token, nil
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("--token-file: %w", err)
	}
	if err := os.Remove(file); err != nil {
		return "", fmt.Errorf("--token-file: remove it once read: %w", err)
	}
	token := strings.TrimSpace(string(data))
	if token == "" {
		return "", fmt.Errorf("--token-file %s: empty", file)
	}
	return token, nil
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

// commandEnv is the environment every command starts with: the runtime's
// own (a container's env from its template), without the runtime's settings.
func commandEnv() map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" || strings.HasPrefix(k, "PRIMER_RUNTIME_") {
			continue
		}
		env[k] = v
	}
	return env
}
