package deploy

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/chart/loader"
	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/engine"
	corev1 "k8s.io/api/core/v1"
)

// chartDir is the Helm chart, relative to this package.
var chartDir = filepath.Join("helm", "ingestor")

// chartKube is the Kubernetes version the chart is rendered for unless a
// test says otherwise: one with native sidecars.
const chartKube = "v1.31.0"

// loadChart loads the chart directory as `helm install` does.
func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	ch, err := loader.Load(chartDir)
	if err != nil {
		t.Fatalf("load chart %s: %v", chartDir, err)
	}
	return ch
}

// renderChart renders the chart as `helm template RELEASE deploy/helm/ingestor
// -f values.yaml --kube-version KUBE` does, with Helm's own library: the
// values (YAML, on top of the chart's values.yaml) are checked against
// values.schema.json, then every template is rendered. It returns the
// rendered documents by template, NOTES.txt and empty documents left out.
func renderChart(t *testing.T, release, kube, values string) (map[string][]byte, error) {
	t.Helper()
	ch := loadChart(t)
	vals, err := chartutil.ReadValues([]byte(values))
	if err != nil {
		return nil, fmt.Errorf("read values: %w", err)
	}
	caps := *chartutil.DefaultCapabilities
	v, err := chartutil.ParseKubeVersion(kube)
	if err != nil {
		return nil, err
	}
	caps.KubeVersion = *v
	if !chartutil.IsCompatibleRange(ch.Metadata.KubeVersion, v.String()) {
		return nil, fmt.Errorf("chart needs Kubernetes %s, not %s", ch.Metadata.KubeVersion, kube)
	}
	top, err := chartutil.ToRenderValues(ch, vals, chartutil.ReleaseOptions{Name: release, Namespace: "ingest", IsInstall: true, Revision: 1}, &caps)
	if err != nil {
		return nil, err
	}
	out, err := engine.Render(ch, top)
	if err != nil {
		return nil, err
	}
	docs := map[string][]byte{}
	for name, text := range out {
		if strings.HasSuffix(name, "NOTES.txt") || strings.HasPrefix(filepath.Base(name), "_") {
			continue
		}
		docs[name] = []byte(text)
	}
	return docs, nil
}

// renderedObjects decodes every document the chart rendered strictly into
// its typed Kubernetes struct, as decodeStrict does for the plain
// manifests; a document that does not decode fails the test.
func renderedObjects(t *testing.T, docs map[string][]byte) []manifest {
	t.Helper()
	names := make([]string, 0, len(docs))
	for n := range docs {
		names = append(names, n)
	}
	slices.Sort(names)
	var out []manifest
	for _, n := range names {
		for i, doc := range splitDocuments(docs[n]) {
			kind, obj, err := decodeStrict(doc)
			if err != nil {
				t.Errorf("%s#%d: %v\n%s", n, i, err, doc)
				continue
			}
			out = append(out, manifest{file: n, doc: i, kind: kind, obj: obj})
		}
	}
	return out
}

// chartLayout gathers a rendered chart's objects into a layout for
// checkLayout. existing are Secrets that exist in the cluster beside the
// release (the one secret.create: false expects).
func chartLayout(t *testing.T, name string, objs []manifest, existing ...*corev1.Secret) *layout {
	t.Helper()
	return collectLayout(t, "chart "+name, objs, existing...)
}

// exampleSecret is the Secret of deploy/kubernetes/common/secret.example.yaml,
// which the chart's default (secret.create: false) expects to exist.
func exampleSecret(t *testing.T) *corev1.Secret {
	t.Helper()
	for _, m := range loadFile(t, secretExample) {
		if s, ok := m.obj.(*corev1.Secret); ok {
			return s
		}
	}
	t.Fatalf("%s holds no Secret", secretExample)
	return nil
}

// renderLayout renders the chart and returns its layout, failing the test
// on any render or decode error.
func renderLayout(t *testing.T, release, values string) *layout {
	t.Helper()
	docs, err := renderChart(t, release, chartKube, values)
	if err != nil {
		t.Fatalf("render chart with values\n%s\n: %v", values, err)
	}
	return chartLayout(t, release, renderedObjects(t, docs), exampleSecret(t))
}
