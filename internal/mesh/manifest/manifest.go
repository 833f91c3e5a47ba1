// Package manifest reads Kubernetes manifests: the YAML streams a mesh's
// CLI prints and the files its install applies, as unstructured objects.
// It sits in the mesh room (below the platforms) so that a mesh package
// (mesh/istio's overlay) and the cluster's installer read them alike.
package manifest

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// Decode reads a multi-document YAML (or JSON) stream into
// unstructured objects, skipping empty documents: a mesh CLI's printed
// manifests, or the files an install applies.
func Decode(data []byte) ([]runtime.Object, error) {
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
	var out []runtime.Object
	for {
		u := &unstructured.Unstructured{}
		if err := dec.Decode(&u.Object); err != nil {
			if errors.Is(err, io.EOF) {
				return out, nil
			}
			return nil, fmt.Errorf("reading manifests: %w", err)
		}
		if len(u.Object) == 0 {
			continue
		}
		out = append(out, u)
	}
}
