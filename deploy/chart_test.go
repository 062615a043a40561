package deploy

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"reflect"
	"slices"
	"strings"
	"testing"

	"helm.sh/helm/v3/pkg/chartutil"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/role"
)

// chartCases are the values a user sets for each layout and each way of
// providing the credentials.
var chartCases = []struct {
	name, values string
}{
	{"process-tree", "layout: process-tree\n"},
	{"sidecars", "layout: sidecars\n"},
	{"process-tree, created Secret", "layout: process-tree\n" + createdSecret},
	{"sidecars, created Secret", "layout: sidecars\n" + createdSecret},
	{"sidecars, own ports and claim", `layout: sidecars
metricsPorts: {supervisor: 9600, consumer: 9711, uploader: 9722, committer: 9733, maintainer: 9744}
wal: {size: 200Gi, storageClassName: premium-retain, accessModes: [ReadWriteOncePod]}
`},
	{"process-tree, own ports", "layout: process-tree\nmetricsPorts: {supervisor: 8000, consumer: 8100, uploader: 8200, committer: 8300, maintainer: 8400}\n"},
}

const createdSecret = `secret:
  create: true
  name: my-credentials
  values: {AZURE_TENANT_ID: t, AZURE_CLIENT_ID: c, AZURE_CLIENT_SECRET: s, PGPASSWORD: p, KAFKA_SASL_PASSWORD: k}
`

// TestChartRendersStrictly renders the chart with Helm's library for both
// layouts and decodes every object strictly into the Kubernetes API types,
// then runs on it the checks the plain manifests pass (checkLayout): the
// configuration in the ConfigMap parses with the ingestor's own strict
// parser (so every key is a real configuration key), each container
// declares the metrics port the configuration gives each process it runs,
// the probes ask those ports for /healthz, every role mounts the WAL claim
// at ingestion.wal.dir, the Secret keys exist, the grace period covers the
// drain and the sidecars stop in record-path order.
func TestChartRendersStrictly(t *testing.T) {
	for _, tc := range chartCases {
		t.Run(tc.name, func(t *testing.T) {
			l := renderLayout(t, "ingestor", tc.values)
			for _, err := range checkLayout(l) {
				t.Error(err)
			}
			checkChartRoles(t, l)
		})
	}
}

// checkChartRoles checks what checkLayout leaves to the layout's shape:
// which roles run in which container, and that every one mounts the WAL.
func checkChartRoles(t *testing.T, l *layout) {
	t.Helper()
	spec := &l.statefulSet.Spec.Template.Spec
	claims := map[string]bool{}
	for _, c := range l.statefulSet.Spec.VolumeClaimTemplates {
		claims[c.Name] = true
	}
	runs := map[string]bool{}
	for _, c := range containers(spec) {
		for _, p := range subcommands[c.Args[0]] {
			runs[p] = true
		}
		cfg, err := l.ingestorConfig(c)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.ContainsFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool {
			return claims[m.Name] && m.MountPath == cfg.Ingestion.WAL.Dir
		}) {
			t.Errorf("%s: container %s does not mount the WAL claim at %s", l.name, c.Name, cfg.Ingestion.WAL.Dir)
		}
	}
	for _, r := range append(slices.Clone(role.All), role.Maintainer) {
		if !runs[r] {
			t.Errorf("%s: no container runs the %s", l.name, r)
		}
	}
}

// TestChartProbesReachRealRoutes serves a process's metrics endpoint as the
// roles do (shared/metrics.Serve) and asks it every probe path the chart
// renders: each must answer 200.
func TestChartProbesReachRealRoutes(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	addr, err := metrics.Serve(ctx, "127.0.0.1:0", metrics.NewRegistry(role.Consumer), nil)
	if err != nil {
		t.Fatal(err)
	}
	paths := map[string]bool{}
	for _, layoutName := range []string{"process-tree", "sidecars"} {
		l := renderLayout(t, "ingestor", "layout: "+layoutName+"\n")
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
				if p != nil && p.HTTPGet != nil {
					paths[p.HTTPGet.Path] = true
				}
			}
		}
	}
	if len(paths) == 0 {
		t.Fatal("the chart renders no HTTP probe")
	}
	for path := range paths {
		resp, err := http.Get("http://" + addr.String() + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Errorf("probe path %s answers %d, want 200", path, resp.StatusCode)
		}
	}
}

// TestChartKeepsInStepWithManifests renders the chart with its default
// values and the release name ingestor for each layout, and compares it
// with the plain manifests of deploy/kubernetes/: the same StatefulSet
// (so that moving from `kubectl apply -k` to `helm install ingestor` is a
// rolling update that keeps every pod's WAL claim), Service and
// PodDisruptionBudget, and a configuration that parses to the same one.
func TestChartKeepsInStepWithManifests(t *testing.T) {
	for _, name := range layouts {
		t.Run(name, func(t *testing.T) {
			plain := loadLayout(t, name)
			chart := renderLayout(t, "ingestor", "layout: "+name+"\n")

			ps, cs := plain.statefulSet.DeepCopy(), chart.statefulSet.DeepCopy()
			if ps.Name != cs.Name {
				t.Errorf("StatefulSet %s in the chart, %s in the manifests", cs.Name, ps.Name)
			}
			if cs.Spec.Template.Annotations["checksum/config"] == "" {
				t.Errorf("the chart's pods carry no checksum/config: a new configuration would not restart them")
			}
			cs.Spec.Template.Annotations = nil
			if !equality.Semantic.DeepEqual(ps.Spec, cs.Spec) {
				t.Errorf("StatefulSet spec differs from %s/statefulset.yaml:\n%s", name, specDiff(ps.Spec, cs.Spec))
			}
			if !equality.Semantic.DeepEqual(plain.service.Spec, chart.service.Spec) {
				t.Errorf("Service spec differs:\nmanifests %+v\nchart     %+v", plain.service.Spec, chart.service.Spec)
			}
			if !equality.Semantic.DeepEqual(plain.pdb.Spec, chart.pdb.Spec) {
				t.Errorf("PodDisruptionBudget spec differs:\nmanifests %+v\nchart     %+v", plain.pdb.Spec, chart.pdb.Spec)
			}

			pc, err := plain.ingestorConfig(containers(&ps.Spec.Template.Spec)[0])
			if err != nil {
				t.Fatal(err)
			}
			cc, err := chart.ingestorConfig(containers(&cs.Spec.Template.Spec)[0])
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range append([]string{metrics.Supervisor}, role.Consumer, role.Uploader, role.Committer, role.Maintainer) {
				pa, _ := metrics.RoleAddress(pc, p)
				ca, _ := metrics.RoleAddress(cc, p)
				if pa != ca {
					t.Errorf("the %s's metrics address is %s in the chart, %s in the manifests", p, ca, pa)
				}
			}
			// The chart spells each role's address out; the rest must match.
			pc.Metrics, cc.Metrics = config.Metrics{}, config.Metrics{}
			if !reflect.DeepEqual(pc, cc) {
				t.Errorf("the chart's default config differs from common/configmap.yaml:\nmanifests %+v\nchart     %+v", pc, cc)
			}
		})
	}
}

// specDiff names the top-level fields of two StatefulSet specs that differ.
func specDiff(a, b appsv1.StatefulSetSpec) string {
	var out []string
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	for i := range va.NumField() {
		if !equality.Semantic.DeepEqual(va.Field(i).Interface(), vb.Field(i).Interface()) {
			out = append(out, fmt.Sprintf("%s:\n  manifests %+v\n  chart     %+v", va.Type().Field(i).Name, va.Field(i).Interface(), vb.Field(i).Interface()))
		}
	}
	return strings.Join(out, "\n")
}

// TestChartValues checks that the values a user sets land where they
// should.
func TestChartValues(t *testing.T) {
	t.Run("created Secret", func(t *testing.T) {
		l := renderLayout(t, "ingestor", "layout: sidecars\n"+createdSecret)
		s, ok := l.secrets["my-credentials"]
		if !ok || s.StringData["PGPASSWORD"] != "p" || len(s.StringData) != 5 {
			t.Fatalf("Secret my-credentials = %+v", s)
		}
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			for _, e := range c.Env {
				if e.ValueFrom.SecretKeyRef.Name != "my-credentials" {
					t.Errorf("container %s: env %s from Secret %s", c.Name, e.Name, e.ValueFrom.SecretKeyRef.Name)
				}
			}
		}
	})
	t.Run("own ports", func(t *testing.T) {
		l := renderLayout(t, "ingestor", "layout: sidecars\nmetricsPorts: {supervisor: 9600, consumer: 9711, uploader: 9722, committer: 9733, maintainer: 9744}\n")
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			want := map[string]int32{"consumer": 9711, "uploader": 9722, "committer": 9733, "maintainer": 9744}[c.Name]
			if len(c.Ports) != 1 || c.Ports[0].ContainerPort != want {
				t.Errorf("container %s: ports %v, want %d", c.Name, c.Ports, want)
			}
		}
	})
	t.Run("claim, resources and release name", func(t *testing.T) {
		l := renderLayout(t, "lake", `layout: process-tree
wal: {size: 200Gi, storageClassName: premium-retain}
resources: {processTree: {requests: {cpu: "3", memory: 6Gi}, limits: {memory: 8Gi}}}
`)
		ss := l.statefulSet
		if ss.Name != "lake-ingestor" || ss.Spec.ServiceName != "lake-ingestor" || l.configMaps["lake-ingestor-config"] == nil {
			t.Errorf("names: StatefulSet %s, Service %s, ConfigMaps %v", ss.Name, ss.Spec.ServiceName, l.configMaps)
		}
		pvc := ss.Spec.VolumeClaimTemplates[0]
		if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.String() != "200Gi" || pvc.Spec.StorageClassName == nil || *pvc.Spec.StorageClassName != "premium-retain" {
			t.Errorf("claim = %+v", pvc.Spec)
		}
		c := ss.Spec.Template.Spec.Containers[0]
		if q := c.Resources.Requests[corev1.ResourceMemory]; q.String() != "6Gi" {
			t.Errorf("memory request %s, want 6Gi", q.String())
		}
	})
	t.Run("maintenance off", func(t *testing.T) {
		l := renderLayout(t, "ingestor", "layout: sidecars\nconfig:\n  maintenance: {enabled: false}\n")
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			if c.Name == role.Maintainer {
				t.Errorf("maintenance.enabled false, but the chart runs a maintainer container")
			}
		}
		if slices.ContainsFunc(l.service.Spec.Ports, func(p corev1.ServicePort) bool { return p.Name == role.Maintainer }) {
			t.Errorf("the Service exposes the maintainer's port without a maintainer")
		}
		for _, err := range checkLayout(l) {
			t.Error(err)
		}
	})
}

// TestChartRefuses checks that values which would not work are refused at
// render time (helm install or helm template), with a message that says
// why.
func TestChartRefuses(t *testing.T) {
	tests := []struct {
		name, kube, values, want string
	}{
		{"unknown layout", chartKube, "layout: sidecar\n", "layout"},
		{"sidecars before native sidecars", "v1.28.5", "layout: sidecars\n", "needs Kubernetes 1.29"},
		{"cluster too old for the chart", "v1.26.0", "layout: process-tree\n", "needs Kubernetes"},
		{"grace period within the drain", chartKube, "terminationGracePeriodSeconds: 100\n", "terminationGracePeriodSeconds 100"},
		{"misspelt value", chartKube, "replica: 3\n", "replica"},
		{"port out of range", chartKube, "metricsPorts: {supervisor: 70000}\n", "supervisor"},
		{"created Secret without a value", chartKube, "secret: {create: true, values: {AZURE_TENANT_ID: t}}\n", "secret.values.AZURE_CLIENT_ID is required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := renderChart(t, "ingestor", tt.kube, tt.values)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("render: %v, want an error with %q", err, tt.want)
			}
		})
	}
}

// TestChartChecksCatchMistakes shows that the checks on the rendered chart
// fail when the chart's output is wrong in the ways a careless edit of the
// values or the templates would make it.
func TestChartChecksCatchMistakes(t *testing.T) {
	tests := []struct {
		name, values string
		break_       func(l *layout)
		want         string
	}{
		{name: "config key that does not exist", values: "config:\n  ingestion:\n    commitIntervalSecond: 20\n", want: "commitIntervalSecond"},
		{name: "existing Secret missing", values: "secret: {name: other-credentials}\n", want: "no Secret other-credentials"},
		{name: "probe on a port the container does not serve", values: "layout: sidecars\n", break_: func(l *layout) {
			l.statefulSet.Spec.Template.Spec.InitContainers[0].ReadinessProbe.HTTPGet.Port.StrVal = "consumer"
		}, want: `no port named "consumer"`},
		{name: "container port not the config's", values: "layout: process-tree\n", break_: func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].Ports[1].ContainerPort = 9499
		}, want: "no container port 9401"},
		{name: "a role without the WAL claim", values: "layout: sidecars\n", break_: func(l *layout) {
			c := &l.statefulSet.Spec.Template.Spec.InitContainers[1]
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.Name == "wal" })
		}, want: "container uploader: no volume mounted at the WAL directory"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			docs, err := renderChart(t, "ingestor", chartKube, tt.values)
			if err != nil {
				t.Fatalf("render: %v", err)
			}
			l := chartLayout(t, "ingestor", renderedObjects(t, docs), exampleSecret(t))
			if tt.break_ != nil {
				if errs := checkLayout(l); len(errs) > 0 {
					t.Fatalf("the rendered chart already fails: %v", errors.Join(errs...))
				}
				tt.break_(l)
			}
			errs := checkLayout(l)
			for _, err := range errs {
				if strings.Contains(err.Error(), tt.want) {
					return
				}
			}
			t.Fatalf("checkLayout found %v, want an error with %q", errors.Join(errs...), tt.want)
		})
	}
}

// TestChartLints runs Helm's own chart linter (what `helm lint
// deploy/helm/ingestor --strict` runs) for both layouts: no warning and no
// error.
func TestChartLints(t *testing.T) {
	kube, err := chartutil.ParseKubeVersion(chartKube)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range layouts {
		t.Run(name, func(t *testing.T) {
			res := lint.AllWithKubeVersion(chartDir, map[string]any{"layout": name}, "ingest", kube)
			for _, m := range res.Messages {
				if m.Severity >= support.WarningSev {
					t.Errorf("helm lint: %s", m)
				}
			}
		})
	}
}
