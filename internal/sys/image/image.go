// Package image builds meshbench's container image in-process, with no
// Docker engine: one layer with the static meshbench binary (and any
// extra binaries given), a numeric non-root user, entrypoint meshbench,
// OCI annotations naming the source, revision and version. The same
// inputs give the same digest: every timestamp is fixed (the binary's
// commit time, else the Unix epoch), entries are sorted, owners numeric.
//
// Outputs: an image tarball that is an OCI image layout and a docker
// archive at once (containerd's `ctr images import`, `docker load`,
// `kind load image-archive` and `k3d image import` all read it), a push
// to a registry (github.com/google/go-containerregistry's remote, with the
// user's docker credentials), or a load into a cluster's nodes by running
// kind, k3d or ctr.
package image

import (
	"archive/tar"
	"bytes"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// UID and GID the image runs as: distroless' "nonroot", numeric so that
// Kubernetes' runAsNonRoot can check it.
const (
	UID = 65532
	GID = 65532
)

// BinDir is where the binaries go in the image.
const BinDir = "/usr/local/bin"

// OCI annotation keys (image-spec annotations.md) set on the manifest and
// as labels in the config.
const (
	AnnotationSource   = "org.opencontainers.image.source"
	AnnotationRevision = "org.opencontainers.image.revision"
	AnnotationVersion  = "org.opencontainers.image.version"
	AnnotationCreated  = "org.opencontainers.image.created"
	AnnotationTitle    = "org.opencontainers.image.title"
	annotationRefName  = "org.opencontainers.image.ref.name"
	// containerd's import names the image from this one.
	annotationContainerdName = "io.containerd.image.name"
)

// Spec is what to build.
type Spec struct {
	// Binary is the static binary the entrypoint runs (meshbench).
	Binary string
	// Name is Binary's file name in BinDir (default its base name).
	Name string
	// Extra binaries go beside it in BinDir under their base names
	// (e.g. oha, wrk2); they must run without a libc from the image.
	Extra []string
	// Entrypoint defaults to [BinDir/base(Binary)].
	Entrypoint []string
	// Source, Revision, Version override what Inspect reads from the
	// binary's build information.
	Source, Revision, Version string
	// Created is the image's timestamp (and every file's); zero means the
	// binary's commit time, else the Unix epoch.
	Created time.Time
	// Title is the org.opencontainers.image.title annotation (default
	// the binary's base name).
	Title string
}

// Info is what a Go binary says about itself.
type Info struct {
	Source, Revision, Version string
	Time                      time.Time // its commit time, zero if unknown
}

var ldflagVersion = regexp.MustCompile(`-X[= ]\S*cli\.Version=(\S+)`)

// Inspect reads a Go binary's build information (module path, VCS
// revision and time, the version stamped with -ldflags -X ...cli.Version).
// A non-Go binary gives a zero Info and no error.
func Inspect(binary string) (Info, error) {
	bi, err := buildinfo.ReadFile(binary)
	if err != nil {
		if _, statErr := os.Stat(binary); statErr != nil {
			return Info{}, statErr
		}
		return Info{}, nil
	}
	var in Info
	if bi.Main.Path != "" {
		in.Source = "https://" + bi.Main.Path
	}
	if v := bi.Main.Version; v != "" && v != "(devel)" {
		in.Version = v
	}
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			in.Revision = s.Value
		case "vcs.time":
			in.Time, _ = time.Parse(time.RFC3339, s.Value)
		case "-ldflags":
			if m := ldflagVersion.FindStringSubmatch(s.Value); m != nil {
				in.Version = strings.Trim(m[1], `'"`)
			}
		}
	}
	return in, nil
}

// CheckStatic reports an error unless binary is a statically linked ELF
// executable (no program interpreter): the image has no libc.
func CheckStatic(binary string) error {
	f, err := elf.Open(binary)
	if err != nil {
		return fmt.Errorf("%s is not an ELF executable: %w", binary, err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			return fmt.Errorf("%s is dynamically linked (the image has no libc): build it with CGO_ENABLED=0", binary)
		}
	}
	return nil
}

// Build builds the image.
func Build(s Spec) (v1.Image, error) {
	if err := CheckStatic(s.Binary); err != nil {
		return nil, err
	}
	info, err := Inspect(s.Binary)
	if err != nil {
		return nil, err
	}
	s.Source = cmpOr(s.Source, info.Source)
	s.Revision = cmpOr(s.Revision, info.Revision)
	s.Version = cmpOr(s.Version, info.Version)
	created := s.Created
	if created.IsZero() {
		created = info.Time
	}
	if created.IsZero() {
		created = time.Unix(0, 0)
	}
	created = created.UTC().Truncate(time.Second)
	base := cmpOr(s.Name, filepath.Base(s.Binary))
	s.Name = base
	s.Title = cmpOr(s.Title, base)
	if len(s.Entrypoint) == 0 {
		s.Entrypoint = []string{path.Join(BinDir, base)}
	}

	layerTar, err := layerTar(s, created)
	if err != nil {
		return nil, err
	}
	anns := map[string]string{AnnotationCreated: created.Format(time.RFC3339), AnnotationTitle: s.Title}
	for k, v := range map[string]string{AnnotationSource: s.Source, AnnotationRevision: s.Revision, AnnotationVersion: s.Version} {
		if v != "" {
			anns[k] = v
		}
	}
	arch := "amd64"
	if a := elfArch(s.Binary); a != "" {
		arch = a
	}
	return oneLayerImage(layerTar, created, "static binaries, /etc/passwd, /tmp", arch, v1.Config{
		User:       fmt.Sprintf("%d:%d", UID, GID),
		Entrypoint: s.Entrypoint,
		Env:        []string{"PATH=" + BinDir + ":/usr/bin:/bin"},
		WorkingDir: "/tmp",
	}, anns)
}

// oneLayerImage is an OCI image of one layer (layerTar) for linux/arch,
// created at created, with cfg as its run configuration and anns as both
// its labels and its manifest annotations. The same inputs give the same
// digest.
func oneLayerImage(layerTar []byte, created time.Time, comment, arch string, cfg v1.Config, anns map[string]string) (v1.Image, error) {
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(layerTar)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.MediaType(empty.Image, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: created}, CreatedBy: "meshbench image", Comment: comment,
	}})
	if err != nil {
		return nil, err
	}
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Architecture, cf.OS = arch, "linux"
	cf.Created = v1.Time{Time: created}
	cfg.Labels = anns
	cf.Config = cfg
	img, err = mutate.ConfigFile(img, cf)
	if err != nil {
		return nil, err
	}
	return mutate.Annotations(img, anns).(v1.Image), nil
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

func elfArch(binary string) string {
	f, err := elf.Open(binary)
	if err != nil {
		return ""
	}
	defer f.Close()
	switch f.Machine {
	case elf.EM_X86_64:
		return "amd64"
	case elf.EM_AARCH64:
		return "arm64"
	}
	return ""
}

// layerTar is the one layer: /etc/passwd and /etc/group with the nonroot
// user, /tmp, /home/nonroot and the binaries, in a fixed order with fixed
// times and numeric owners.
func layerTar(s Spec, mtime time.Time) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	hdr := func(name string, mode int64, typ byte, size int64) *tar.Header {
		return &tar.Header{Name: name, Mode: mode, Typeflag: typ, Size: size, ModTime: mtime, Format: tar.FormatPAX,
			Uname: "", Gname: ""}
	}
	dirs := []struct {
		name string
		mode int64
		uid  int
	}{{"etc/", 0o755, 0}, {"home/", 0o755, 0}, {"home/nonroot/", 0o700, UID}, {"tmp/", 0o1777, 0}, {"usr/", 0o755, 0}, {"usr/local/", 0o755, 0}, {"usr/local/bin/", 0o755, 0}}
	for _, d := range dirs {
		h := hdr(d.name, d.mode, tar.TypeDir, 0)
		h.Uid, h.Gid = d.uid, d.uid
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
	}
	files := map[string][]byte{
		"etc/passwd": fmt.Appendf(nil, "root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, GID),
		"etc/group":  fmt.Appendf(nil, "root:x:0:\nnonroot:x:%d:\n", GID),
	}
	for _, n := range []string{"etc/group", "etc/passwd"} {
		if err := tw.WriteHeader(hdr(n, 0o644, tar.TypeReg, int64(len(files[n])))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(files[n]); err != nil {
			return nil, err
		}
	}
	seen := map[string]string{}
	var names []string
	for i, b := range append([]string{s.Binary}, s.Extra...) {
		n := filepath.Base(b)
		if i == 0 {
			n = s.Name
		}
		if prev, ok := seen[n]; ok {
			return nil, fmt.Errorf("%s and %s would both be %s/%s in the image", prev, b, BinDir, n)
		}
		seen[n] = b
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		data, err := os.ReadFile(seen[n])
		if err != nil {
			return nil, err
		}
		if err := tw.WriteHeader(hdr(strings.TrimPrefix(path.Join(BinDir, n), "/"), 0o755, tar.TypeReg, int64(len(data)))); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// WriteArchive writes img, named ref, as one tar that is both an OCI image
// layout (oci-layout, index.json, blobs/) and a docker archive
// (manifest.json), as `docker save` does since Docker 25. The bytes depend
// only on the image and ref.
func WriteArchive(w io.Writer, img v1.Image, ref name.Reference) error {
	manifest, err := img.RawManifest()
	if err != nil {
		return err
	}
	digest, err := img.Digest()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	cfgName, err := img.ConfigName()
	if err != nil {
		return err
	}
	cfg, err := img.RawConfigFile()
	if err != nil {
		return err
	}
	layers, err := img.Layers()
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	put := func(name string, data []byte) error {
		if err := tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg, ModTime: time.Unix(0, 0), Format: tar.FormatPAX}); err != nil {
			return err
		}
		_, err := tw.Write(data)
		return err
	}
	blob := func(h v1.Hash) string { return "blobs/" + h.Algorithm + "/" + h.Hex }
	if err := put("oci-layout", []byte(`{"imageLayoutVersion":"1.0.0"}`)); err != nil {
		return err
	}
	full := ref.Name()
	if t, ok := ref.(name.Tag); ok {
		full = t.Name()
	}
	index := map[string]any{
		"schemaVersion": 2, "mediaType": types.OCIImageIndex,
		"manifests": []any{map[string]any{
			"mediaType": mt, "digest": digest.String(), "size": len(manifest),
			"annotations": map[string]string{annotationContainerdName: full, annotationRefName: ref.Identifier()},
		}},
	}
	ib, err := json.Marshal(index)
	if err != nil {
		return err
	}
	if err := put("index.json", ib); err != nil {
		return err
	}
	var layerPaths []string
	for _, l := range layers {
		d, err := l.Digest()
		if err != nil {
			return err
		}
		layerPaths = append(layerPaths, blob(d))
	}
	docker := []map[string]any{{"Config": blob(cfgName), "RepoTags": []string{full}, "Layers": layerPaths}}
	db, err := json.Marshal(docker)
	if err != nil {
		return err
	}
	if err := put("manifest.json", db); err != nil {
		return err
	}
	if err := put(blob(digest), manifest); err != nil {
		return err
	}
	if err := put(blob(cfgName), cfg); err != nil {
		return err
	}
	for i, l := range layers {
		rc, err := l.Compressed()
		if err != nil {
			return err
		}
		data, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if err := put(layerPaths[i], data); err != nil {
			return err
		}
	}
	return tw.Close()
}

// WriteArchiveFile writes the archive to path (via a temporary file in
// the same directory, renamed into place: never a half-written archive).
func WriteArchiveFile(path string, img v1.Image, ref name.Reference) error {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	if err := WriteArchive(f, img, ref); err != nil {
		f.Close()
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	if err := os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ParseRef parses an image reference (a tag; "latest" is refused: with it
// Kubernetes' default pull policy is Always, and an imported image would be
// pulled anyway).
func ParseRef(s string) (name.Reference, error) {
	ref, err := name.ParseReference(s, name.WeakValidation)
	if err != nil {
		return nil, err
	}
	if t, ok := ref.(name.Tag); ok && t.TagStr() == "latest" {
		if !strings.HasSuffix(s, ":latest") {
			return nil, fmt.Errorf("image %q has no tag: give one (not latest, which makes Kubernetes pull it)", s)
		}
		return nil, fmt.Errorf("image %q: tag latest makes Kubernetes always pull it; use another tag", s)
	}
	if _, ok := ref.(name.Digest); ok {
		return nil, errors.New("image " + strconv.Quote(s) + ": give a tag to name the image, not a digest")
	}
	return ref, nil
}
