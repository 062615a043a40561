package deploy

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kjson "sigs.k8s.io/json"
	"sigs.k8s.io/yaml"

	"github.com/icewal/ingestor/shared/config"
)

// Where the deployment files are, relative to this package's directory
// (the working directory of its tests).
const (
	kubernetesDir = "kubernetes"
	dockerfile    = "Dockerfile"
	alertsFile    = "prometheus/alerts.yaml"
	dashboardFile = "grafana/ingestor-dashboard.json"
	// repoRoot is the module root: cmd/, go.mod, docs/.
	repoRoot = ".."
)

// layouts are the two ways to run the ingestor on Kubernetes, each a
// kustomization directory under kubernetes/.
var layouts = []string{"process-tree", "sidecars"}

// manifest is one document of a YAML file, decoded into its typed struct.
type manifest struct {
	file string // path relative to this package
	doc  int    // 0-based index of the document in the file
	kind string // apiVersion + "/" + kind, e.g. "apps/v1/StatefulSet"
	obj  any    // *appsv1.StatefulSet, *corev1.ConfigMap, ...
}

func (m manifest) String() string { return fmt.Sprintf("%s#%d (%s)", m.file, m.doc, m.kind) }

// newObject returns an empty typed object of each kind the manifests may
// hold. A kind missing here fails the tests: add it, and checks for it.
func newObject(apiVersion, kind string) (any, bool) {
	switch apiVersion + "/" + kind {
	case "apps/v1/StatefulSet":
		return &appsv1.StatefulSet{}, true
	case "v1/ConfigMap":
		return &corev1.ConfigMap{}, true
	case "v1/Secret":
		return &corev1.Secret{}, true
	case "v1/Service":
		return &corev1.Service{}, true
	case "policy/v1/PodDisruptionBudget":
		return &policyv1.PodDisruptionBudget{}, true
	}
	return nil, false
}

var docSeparator = regexp.MustCompile(`(?m)^---[ \t]*$`)

// splitDocuments splits a YAML stream into its documents, leaving out
// those that hold only comments and blank lines.
func splitDocuments(b []byte) [][]byte {
	var docs [][]byte
	for _, d := range docSeparator.Split(string(b), -1) {
		empty := true
		for _, line := range strings.Split(d, "\n") {
			if t := strings.TrimSpace(line); t != "" && !strings.HasPrefix(t, "#") {
				empty = false
				break
			}
		}
		if !empty {
			docs = append(docs, []byte(d))
		}
	}
	return docs
}

// decodeStrict decodes one YAML document into the typed struct of its kind
// the way the API server reads a request body: YAML to JSON, then a
// case-sensitive JSON decode that reports unknown and duplicate fields.
func decodeStrict(doc []byte) (kind string, obj any, err error) {
	var tm metav1.TypeMeta
	if err := yaml.Unmarshal(doc, &tm); err != nil {
		return "", nil, fmt.Errorf("read apiVersion and kind: %w", err)
	}
	kind = tm.APIVersion + "/" + tm.Kind
	obj, ok := newObject(tm.APIVersion, tm.Kind)
	if !ok {
		return kind, nil, fmt.Errorf("kind %q is not one the tests know", kind)
	}
	if err := decodeYAMLStrict(doc, obj); err != nil {
		return kind, nil, fmt.Errorf("decode %s: %w", kind, err)
	}
	return kind, obj, nil
}

// decodeYAMLStrict decodes YAML into v through JSON, case-sensitively, and
// fails on duplicate keys and on fields v does not have.
func decodeYAMLStrict(doc []byte, v any) error {
	js, err := yaml.YAMLToJSONStrict(doc)
	if err != nil {
		return fmt.Errorf("not valid YAML: %w", err)
	}
	strict, err := kjson.UnmarshalStrict(js, v, kjson.DisallowDuplicateFields, kjson.DisallowUnknownFields)
	if err != nil {
		return err
	}
	if len(strict) > 0 {
		msgs := make([]string, len(strict))
		for i, e := range strict {
			msgs[i] = e.Error()
		}
		return fmt.Errorf("%s", strings.Join(msgs, "; "))
	}
	return nil
}

// isKustomization tells the kustomize files apart from the manifests.
func isKustomization(path string) bool {
	return filepath.Base(path) == "kustomization.yaml"
}

// manifestFiles lists every YAML manifest under kubernetes/.
func manifestFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(kubernetesDir, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && (strings.HasSuffix(path, ".yaml") || strings.HasSuffix(path, ".yml")) && !isKustomization(path) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("list manifests: %v", err)
	}
	if len(files) == 0 {
		t.Fatalf("no manifests under %s", kubernetesDir)
	}
	slices.Sort(files)
	return files
}

// loadFile decodes every document of a manifest file, failing the test on
// any that does not decode strictly.
func loadFile(t *testing.T, path string) []manifest {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var out []manifest
	for i, doc := range splitDocuments(b) {
		kind, obj, err := decodeStrict(doc)
		if err != nil {
			t.Errorf("%s#%d: %v", path, i, err)
			continue
		}
		out = append(out, manifest{file: path, doc: i, kind: kind, obj: obj})
	}
	return out
}

// kustomization is the part of a kustomization.yaml these manifests use;
// any other field fails the strict decode, so that a new one gets checked.
type kustomization struct {
	APIVersion string   `json:"apiVersion"`
	Kind       string   `json:"kind"`
	Resources  []string `json:"resources"`
}

func readKustomization(t *testing.T, dir string) kustomization {
	t.Helper()
	path := filepath.Join(dir, "kustomization.yaml")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	var k kustomization
	if err := decodeYAMLStrict(b, &k); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	if k.APIVersion != "kustomize.config.k8s.io/v1beta1" || k.Kind != "Kustomization" {
		t.Errorf("%s: apiVersion/kind %s/%s, want kustomize.config.k8s.io/v1beta1/Kustomization", path, k.APIVersion, k.Kind)
	}
	return k
}

// loadKustomization returns the objects that `kubectl apply -k dir` applies:
// each resource file, and each resource directory's own kustomization.
func loadKustomization(t *testing.T, dir string) []manifest {
	t.Helper()
	var out []manifest
	for _, r := range readKustomization(t, dir).Resources {
		path := filepath.Join(dir, r)
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("%s/kustomization.yaml: resource %s: %v", dir, r, err)
			continue
		}
		if info.IsDir() {
			out = append(out, loadKustomization(t, path)...)
			continue
		}
		out = append(out, loadFile(t, path)...)
	}
	return out
}

// layout is one layout's objects, with the Secret of credentials that the
// user creates beside them (common/secret.example.yaml shows its keys).
type layout struct {
	name        string
	statefulSet *appsv1.StatefulSet
	service     *corev1.Service
	configMaps  map[string]*corev1.ConfigMap
	secrets     map[string]*corev1.Secret
	pdb         *policyv1.PodDisruptionBudget
}

// secretExample is the file that shows the Secret's name and keys.
var secretExample = filepath.Join(kubernetesDir, "common", "secret.example.yaml")

func loadLayout(t *testing.T, name string) *layout {
	t.Helper()
	objs := loadKustomization(t, filepath.Join(kubernetesDir, name))
	objs = append(objs, loadFile(t, secretExample)...)
	return collectLayout(t, "layout "+name, objs)
}

// collectLayout sorts the objects of one layout (the plain manifests' or
// the chart's) into what checkLayout looks at; existing are Secrets that
// exist beside them.
func collectLayout(t *testing.T, name string, objs []manifest, existing ...*corev1.Secret) *layout {
	t.Helper()
	l := &layout{name: name, configMaps: map[string]*corev1.ConfigMap{}, secrets: map[string]*corev1.Secret{}}
	for _, s := range existing {
		l.secrets[s.Name] = s
	}
	for _, m := range objs {
		switch o := m.obj.(type) {
		case *appsv1.StatefulSet:
			if l.statefulSet != nil {
				t.Errorf("%s: second StatefulSet in %s", name, m)
			}
			l.statefulSet = o
		case *corev1.Service:
			if l.service != nil {
				t.Errorf("%s: second Service in %s", name, m)
			}
			l.service = o
		case *corev1.ConfigMap:
			l.configMaps[o.Name] = o
		case *corev1.Secret:
			l.secrets[o.Name] = o
		case *policyv1.PodDisruptionBudget:
			l.pdb = o
		}
	}
	if l.statefulSet == nil || l.service == nil || l.pdb == nil {
		t.Fatalf("%s: want a StatefulSet, a Service and a PodDisruptionBudget, got %d objects", name, len(objs))
	}
	return l
}

// containers returns the pod's init containers and containers, in the
// order of the spec.
func containers(spec *corev1.PodSpec) []corev1.Container {
	return append(slices.Clone(spec.InitContainers), spec.Containers...)
}

// configArg returns the value of --config in a container's arguments.
func configArg(args []string) (string, bool) {
	for i, a := range args {
		if a == "--config" && i+1 < len(args) {
			return args[i+1], true
		}
		if v, ok := strings.CutPrefix(a, "--config="); ok {
			return v, true
		}
	}
	return "", false
}

// mountedConfigMapFile resolves the file a container reads at path to a
// ConfigMap and key through the container's volume mounts.
func mountedConfigMapFile(spec *corev1.PodSpec, c corev1.Container, path string) (cmName, key string, err error) {
	for _, vm := range c.VolumeMounts {
		rel, err := filepath.Rel(vm.MountPath, path)
		if err != nil || strings.HasPrefix(rel, "..") || rel == "." {
			continue
		}
		for _, v := range spec.Volumes {
			if v.Name != vm.Name {
				continue
			}
			if v.ConfigMap == nil {
				return "", "", fmt.Errorf("%s is on volume %s, which is not a ConfigMap", path, v.Name)
			}
			if vm.SubPath != "" {
				return "", "", fmt.Errorf("volume %s is mounted with subPath, which never sees updates", v.Name)
			}
			if len(v.ConfigMap.Items) == 0 {
				return v.ConfigMap.Name, rel, nil
			}
			for _, it := range v.ConfigMap.Items {
				if it.Path == rel {
					return v.ConfigMap.Name, it.Key, nil
				}
			}
			return "", "", fmt.Errorf("volume %s lists no item at %s", v.Name, rel)
		}
		return "", "", fmt.Errorf("volume mount %s names no volume of the pod", vm.Name)
	}
	return "", "", fmt.Errorf("no volume is mounted at %s", filepath.Dir(path))
}

// ingestorConfig returns the configuration a container reads, parsed by
// the ingestor's own parser.
func (l *layout) ingestorConfig(c corev1.Container) (*config.Config, error) {
	spec := &l.statefulSet.Spec.Template.Spec
	path, ok := configArg(c.Args)
	if !ok {
		return nil, fmt.Errorf("container %s: no --config in args %q", c.Name, c.Args)
	}
	cmName, key, err := mountedConfigMapFile(spec, c, path)
	if err != nil {
		return nil, fmt.Errorf("container %s: %w", c.Name, err)
	}
	cm, ok := l.configMaps[cmName]
	if !ok {
		return nil, fmt.Errorf("container %s reads ConfigMap %s, which the layout does not hold", c.Name, cmName)
	}
	doc, ok := cm.Data[key]
	if !ok {
		return nil, fmt.Errorf("container %s reads key %s of ConfigMap %s, which it does not have", c.Name, key, cmName)
	}
	env, err := l.containerEnv(c)
	if err != nil {
		return nil, err
	}
	// The file names its secrets as ${env:NAME}, which Parse resolves from
	// the process's environment: parse it with the container's.
	var cfg *config.Config
	err = withEnv(env, func() (err error) {
		cfg, err = config.Parse([]byte(doc))
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("container %s: ConfigMap %s key %s: %w", c.Name, cmName, key, err)
	}
	return cfg, nil
}

// containerEnv resolves a container's environment the way the kubelet
// does: plain values, and the values of Secret and ConfigMap keys.
func (l *layout) containerEnv(c corev1.Container) (map[string]string, error) {
	env := map[string]string{}
	for _, e := range c.Env {
		switch {
		case e.ValueFrom == nil:
			env[e.Name] = e.Value
		case e.ValueFrom.SecretKeyRef != nil:
			ref := e.ValueFrom.SecretKeyRef
			s, ok := l.secrets[ref.Name]
			if !ok {
				return nil, fmt.Errorf("container %s: env %s: no Secret %s", c.Name, e.Name, ref.Name)
			}
			if v, ok := s.StringData[ref.Key]; ok {
				env[e.Name] = v
			} else if b, ok := s.Data[ref.Key]; ok {
				env[e.Name] = string(b)
			} else {
				return nil, fmt.Errorf("container %s: env %s: Secret %s has no key %q", c.Name, e.Name, ref.Name, ref.Key)
			}
		case e.ValueFrom.ConfigMapKeyRef != nil:
			ref := e.ValueFrom.ConfigMapKeyRef
			v, ok := l.configMaps[ref.Name].Data[ref.Key]
			if !ok {
				return nil, fmt.Errorf("container %s: env %s: no key %q in ConfigMap %s", c.Name, e.Name, ref.Key, ref.Name)
			}
			env[e.Name] = v
		}
	}
	return env, nil
}

// withEnv runs fn with exactly the given variables set among those the
// manifests name (every other variable of those names unset), and puts
// the environment back afterwards. The tests of this package do not run
// in parallel, so nothing else sees the change.
func withEnv(env map[string]string, fn func() error) error {
	type saved struct {
		val string
		ok  bool
	}
	names := map[string]bool{}
	for k := range env {
		names[k] = true
	}
	for _, k := range credentialVars {
		names[k] = true
	}
	old := map[string]saved{}
	for k := range names {
		v, ok := os.LookupEnv(k)
		old[k] = saved{v, ok}
		if nv, set := env[k]; set {
			os.Setenv(k, nv)
		} else {
			os.Unsetenv(k)
		}
	}
	defer func() {
		for k, s := range old {
			if s.ok {
				os.Setenv(k, s.val)
			} else {
				os.Unsetenv(k)
			}
		}
	}()
	return fn()
}

// credentialVars are the variables the shipped manifests set from the
// Secret; withEnv clears them when a container does not set them, so that
// the developer's own environment cannot make a check pass.
var credentialVars = []string{"AZURE_TENANT_ID", "AZURE_CLIENT_ID", "AZURE_CLIENT_SECRET", "PGPASSWORD", "KAFKA_SASL_PASSWORD"}

// labelsMatch tells whether every selector label is on the object.
func labelsMatch(selector, labels map[string]string) bool {
	if len(selector) == 0 {
		return false
	}
	for k, v := range selector {
		if labels[k] != v {
			return false
		}
	}
	return true
}

// readRepoFile reads a file relative to the module root.
func readRepoFile(t *testing.T, rel string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, rel))
	if err != nil {
		t.Fatalf("read %s: %v", rel, err)
	}
	return bytes.ReplaceAll(b, []byte("\r\n"), []byte("\n"))
}
