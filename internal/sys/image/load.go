package image

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
)

// Push pushes img to ref with the user's docker credentials
// (~/.docker/config.json and its credential helpers; anonymous when none
// match). Extra options (e.g. a transport) go to remote.Write.
func Push(ctx context.Context, img v1.Image, ref name.Reference, opts ...remote.Option) error {
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	if err := remote.Write(ref, img, opts...); err != nil {
		return fmt.Errorf("pushing %s: %w", ref.Name(), err)
	}
	return nil
}

// Target is where --load puts an image: a kind or k3d cluster (by running
// kind or k3d, which must be on PATH) or a containerd socket (by running
// ctr).
type Target struct {
	Kind string // "kind", "k3d" or "containerd"
	Name string // the cluster's name or the socket's path
}

// ParseTarget parses KIND:NAME.
func ParseTarget(s string) (Target, error) {
	kind, nm, ok := strings.Cut(s, ":")
	if !ok || nm == "" {
		return Target{}, fmt.Errorf("--load %q: want kind:CLUSTER, k3d:CLUSTER or containerd:SOCKET", s)
	}
	switch kind {
	case "kind", "k3d", "containerd":
		return Target{Kind: kind, Name: nm}, nil
	}
	return Target{}, fmt.Errorf("--load %q: %q is not kind, k3d or containerd", s, kind)
}

func (t Target) String() string { return t.Kind + ":" + t.Name }

// Command is the command that loads the archive at tarball into t, with
// ctr as the ctr binary for containerd targets ("" looks it up on PATH).
func (t Target) Command(tarball, ctr string) []string {
	switch t.Kind {
	case "kind":
		return []string{"kind", "load", "image-archive", tarball, "--name", t.Name}
	case "k3d":
		return []string{"k3d", "image", "import", tarball, "--cluster", t.Name}
	default:
		if ctr == "" {
			ctr = "ctr"
		}
		// k8s.io is the namespace the kubelet's CRI sees.
		return []string{ctr, "--address", t.Name, "--namespace", "k8s.io", "images", "import", tarball}
	}
}

// Load writes img as an archive to a temporary file and loads it into t by
// running the tool (see Target.Command); the error carries the tool's
// output.
func Load(ctx context.Context, img v1.Image, ref name.Reference, t Target, ctr string) error {
	dir, err := os.MkdirTemp("", "meshbench-image-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	tarball := filepath.Join(dir, "image.tar")
	if err := WriteArchiveFile(tarball, img, ref); err != nil {
		return err
	}
	return LoadArchive(ctx, tarball, t, ctr)
}

// LoadArchive loads an archive WriteArchiveFile wrote into t (see Load),
// so that one archive can go to several targets.
func LoadArchive(ctx context.Context, tarball string, t Target, ctr string) error {
	argv := t.Command(tarball, ctr)
	if _, err := exec.LookPath(argv[0]); err != nil {
		return fmt.Errorf("loading into %s needs %s on PATH: %w", t, argv[0], err)
	}
	out, err := exec.CommandContext(ctx, argv[0], argv[1:]...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("loading into %s: %s: %w: %s", t, strings.Join(argv, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}
