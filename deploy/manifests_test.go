package deploy

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
	"github.com/icewal/ingestor/shared/role"
)

// drainMargin is how much longer than ingestion.drainTimeoutSeconds the
// kubelet must wait before its SIGKILL: after the drain deadline the
// supervisor still kills what is left, reaps its children and exits.
const drainMargin = 10

// healthPath is what every ingestor process answers on its metrics port.
const healthPath = "/healthz"

// subcommands maps the first argument of an ingestor container to the
// processes it runs, each with its own metrics endpoint.
var subcommands = map[string][]string{
	"run":           {metrics.Supervisor, role.Consumer, role.Uploader, role.Committer, role.Maintainer},
	role.Consumer:   {role.Consumer},
	role.Uploader:   {role.Uploader},
	role.Committer:  {role.Committer},
	role.Maintainer: {role.Maintainer},
}

// TestManifestsDecodeStrictly decodes every document under kubernetes/ into
// the typed Kubernetes struct of its kind, rejecting unknown, duplicate and
// miscased fields, as the API server does.
func TestManifestsDecodeStrictly(t *testing.T) {
	for _, f := range manifestFiles(t) {
		if ms := loadFile(t, f); len(ms) == 0 {
			t.Errorf("%s: no document", f)
		}
	}
}

// TestDecodeStrictRejects shows that the strict decode catches the
// mistakes it is there for.
func TestDecodeStrictRejects(t *testing.T) {
	const base = "apiVersion: apps/v1\nkind: StatefulSet\nmetadata: {name: x}\nspec:\n  serviceName: x\n"
	tests := []struct {
		name, doc, want string
	}{
		{"unknown field", base + "  terminationGracePeriod: 120\n", `unknown field "spec.terminationGracePeriod"`},
		{"miscased field", base + "  ServiceName: y\n", `unknown field "spec.ServiceName"`},
		{"duplicate field", base + "  serviceName: y\n", "already set"},
		{"wrong type", base + "  replicas: two\n", "cannot unmarshal"},
		{"unknown kind", "apiVersion: v1\nkind: Pod\nmetadata: {name: x}\n", "not one the tests know"},
		{"unknown apiVersion", "apiVersion: apps/v1beta1\nkind: StatefulSet\n", "not one the tests know"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := decodeStrict([]byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("decodeStrict: %v, want an error with %q", err, tt.want)
			}
		})
	}
	const ok = base + "  replicas: 2\n"
	if _, _, err := decodeStrict([]byte(ok)); err != nil {
		t.Fatalf("decodeStrict of a valid document: %v", err)
	}
}

// TestKustomizations checks that each kustomization lists files that
// exist, and that no manifest is left out of every kustomization (the
// Secret's example stays out on purpose).
func TestKustomizations(t *testing.T) {
	listed := map[string]bool{}
	var walk func(dir string)
	walk = func(dir string) {
		for _, r := range readKustomization(t, dir).Resources {
			path := filepath.Join(dir, r)
			info, err := os.Stat(path)
			if err != nil {
				t.Errorf("%s/kustomization.yaml: %v", dir, err)
				continue
			}
			if info.IsDir() {
				walk(path)
				continue
			}
			listed[filepath.Clean(path)] = true
		}
	}
	for _, l := range layouts {
		walk(filepath.Join(kubernetesDir, l))
	}
	for _, f := range manifestFiles(t) {
		if !listed[filepath.Clean(f)] && f != secretExample {
			t.Errorf("%s is in no layout's kustomization", f)
		}
	}
	if listed[secretExample] {
		t.Errorf("%s is applied by a kustomization: its placeholder credentials would reach the cluster", secretExample)
	}
}

// TestLayouts runs the checks a user relies on against both layouts.
func TestLayouts(t *testing.T) {
	for _, name := range layouts {
		t.Run(name, func(t *testing.T) {
			l := loadLayout(t, name)
			for _, err := range checkLayout(l) {
				t.Error(err)
			}
		})
	}
}

// TestLayoutChecksCatchMistakes breaks the shipped layouts in the ways a
// careless edit would, and expects checkLayout to say so.
func TestLayoutChecksCatchMistakes(t *testing.T) {
	tests := []struct {
		name   string
		layout string
		break_ func(l *layout)
		want   string
	}{
		{"grace period within the drain budget", "process-tree", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(100))
		}, "terminationGracePeriodSeconds 100"},
		{"WAL on an emptyDir", "sidecars", func(l *layout) {
			spec := &l.statefulSet.Spec.Template.Spec
			spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
			for i := range spec.Containers {
				for j := range spec.Containers[i].VolumeMounts {
					if spec.Containers[i].VolumeMounts[j].Name == "wal" {
						spec.Containers[i].VolumeMounts[j].Name = "scratch"
					}
				}
			}
		}, "not a volume claim"},
		{"WAL mounted elsewhere", "process-tree", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].VolumeMounts[0].MountPath = "/data"
		}, "no volume mounted at the WAL directory /var/lib/ingestor/wal"},
		{"claims deleted with the pods", "process-tree", func(l *layout) {
			l.statefulSet.Spec.PersistentVolumeClaimRetentionPolicy.WhenScaled = "Delete"
		}, "whenScaled"},
		{"probe on another role's port", "sidecars", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.InitContainers[1].LivenessProbe.HTTPGet.Port = intstr.FromInt32(9403)
		}, "livenessProbe: port 9403 is not"},
		{"probe on a port name the container lacks", "process-tree", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].ReadinessProbe.HTTPGet.Port = intstr.FromString("metrics")
		}, `no port named "metrics"`},
		{"no readiness probe", "sidecars", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].ReadinessProbe = nil
		}, "no readinessProbe"},
		{"committer stops before the consumer", "sidecars", func(l *layout) {
			spec := &l.statefulSet.Spec.Template.Spec
			slices.Reverse(spec.InitContainers)
		}, "stops before the uploader"},
		{"consumer as a sidecar before the others", "sidecars", func(l *layout) {
			spec := &l.statefulSet.Spec.Template.Spec
			c := spec.Containers[0]
			c.RestartPolicy = ptr(corev1.ContainerRestartPolicyAlways)
			spec.InitContainers = append([]corev1.Container{c}, spec.InitContainers...)
			spec.Containers = []corev1.Container{{Name: "pause", Image: "registry.k8s.io/pause:3.10"}}
		}, "stops before"},
		{"role as a plain init container", "sidecars", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.InitContainers[0].RestartPolicy = nil
		}, "never completes"},
		{"role missing", "sidecars", func(l *layout) {
			spec := &l.statefulSet.Spec.Template.Spec
			spec.InitContainers = spec.InitContainers[1:]
		}, "no container runs the committer"},
		{"missing Secret key", "process-tree", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].Env[2].ValueFrom.SecretKeyRef.Key = "AZURE_CLIENT_SECRT"
		}, `Secret ingestor-credentials has no key "AZURE_CLIENT_SECRT"`},
		{"config refers to a variable the container lacks", "sidecars", func(l *layout) {
			c := &l.statefulSet.Spec.Template.Spec.InitContainers[1]
			c.Env = slices.DeleteFunc(c.Env, func(e corev1.EnvVar) bool { return e.Name == "KAFKA_SASL_PASSWORD" })
		}, "environment variable KAFKA_SASL_PASSWORD is not set"},
		{"optional Secret key", "sidecars", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].Env[0].ValueFrom.SecretKeyRef.Optional = ptr(true)
		}, "optional"},
		{"runs as root", "process-tree", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.SecurityContext.RunAsNonRoot = ptr(false)
		}, "runAsNonRoot"},
		{"read-only root without /tmp", "process-tree", func(l *layout) {
			c := &l.statefulSet.Spec.Template.Spec.Containers[0]
			c.VolumeMounts = slices.DeleteFunc(c.VolumeMounts, func(m corev1.VolumeMount) bool { return m.MountPath == "/tmp" })
		}, "writable /tmp"},
		{"metrics on loopback", "process-tree", func(l *layout) {
			cm := l.configMaps["ingestor-config"]
			cm.Data["ingestor.yaml"] = strings.Replace(cm.Data["ingestor.yaml"], `address: ":9400"`, `address: "127.0.0.1:9400"`, 1)
		}, "loopback"},
		{"metrics port moved in the config only", "sidecars", func(l *layout) {
			cm := l.configMaps["ingestor-config"]
			cm.Data["ingestor.yaml"] = strings.Replace(cm.Data["ingestor.yaml"], `address: ":9400"`, `address: ":9500"`, 1)
		}, "no container port 9501"},
		{"config file not mounted", "sidecars", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.Containers[0].Args[2] = "/etc/ingestor.yaml"
		}, "no volume is mounted at /etc"},
		{"no memory request", "sidecars", func(l *layout) {
			delete(l.statefulSet.Spec.Template.Spec.InitContainers[0].Resources.Requests, corev1.ResourceMemory)
		}, "no memory request"},
		{"Service points at a missing port", "sidecars", func(l *layout) {
			l.service.Spec.Ports = append(l.service.Spec.Ports, corev1.ServicePort{Name: "supervisor", Port: 9400, TargetPort: intstr.FromString("supervisor")})
		}, `targetPort "supervisor"`},
		{"PodDisruptionBudget selects nothing", "sidecars", func(l *layout) {
			l.pdb.Spec.Selector.MatchLabels["app.kubernetes.io/name"] = "ingester"
		}, "PodDisruptionBudget"},
		{"two containers on one port", "sidecars", func(l *layout) {
			l.statefulSet.Spec.Template.Spec.InitContainers[0].Ports[0].ContainerPort = 9401
		}, "port 9401 is used by"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := loadLayout(t, tt.layout)
			if errs := checkLayout(l); len(errs) > 0 {
				t.Fatalf("the shipped layout already fails: %v", errors.Join(errs...))
			}
			tt.break_(l)
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

// TestLayoutsAreInterchangeable checks that applying one layout over the
// other is a rolling update of the same StatefulSet that keeps every pod's
// WAL claim: the fields the API server does not let change must agree.
func TestLayoutsAreInterchangeable(t *testing.T) {
	a, b := loadLayout(t, layouts[0]), loadLayout(t, layouts[1])
	sa, sb := a.statefulSet, b.statefulSet
	if sa.Name != sb.Name {
		t.Errorf("StatefulSet names %s and %s differ: switching layouts would run both", sa.Name, sb.Name)
	}
	if sa.Spec.ServiceName != sb.Spec.ServiceName {
		t.Errorf("serviceName %s and %s differ (immutable)", sa.Spec.ServiceName, sb.Spec.ServiceName)
	}
	if !reflect.DeepEqual(sa.Spec.Selector, sb.Spec.Selector) {
		t.Errorf("selectors %v and %v differ (immutable)", sa.Spec.Selector, sb.Spec.Selector)
	}
	if !reflect.DeepEqual(sa.Spec.VolumeClaimTemplates, sb.Spec.VolumeClaimTemplates) {
		t.Errorf("volumeClaimTemplates differ (immutable): the pods would not keep their WAL volumes")
	}
	if !reflect.DeepEqual(a.configMaps, b.configMaps) {
		t.Errorf("the layouts ship different ConfigMaps")
	}
	if a.service.Name != b.service.Name {
		t.Errorf("Service names %s and %s differ", a.service.Name, b.service.Name)
	}
}

// TestImageTagsMatch checks that every container of both layouts runs the
// same image, pinned to a version.
func TestImageTagsMatch(t *testing.T) {
	images := map[string][]string{}
	for _, name := range layouts {
		l := loadLayout(t, name)
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			images[c.Image] = append(images[c.Image], name+"/"+c.Name)
		}
	}
	if len(images) != 1 {
		t.Fatalf("containers run different images: %v", images)
	}
	for image := range images {
		if _, err := imageTag(image); err != nil {
			t.Error(err)
		}
	}
}

// imageTag returns the tag of an image reference, refusing a missing tag
// and "latest": the pods of one StatefulSet must all run the same build.
func imageTag(image string) (string, error) {
	if _, digest, ok := strings.Cut(image, "@"); ok && digest != "" {
		return digest, nil
	}
	slash := strings.LastIndex(image, "/")
	colon := strings.LastIndex(image, ":")
	if colon <= slash {
		return "", fmt.Errorf("image %s has no tag", image)
	}
	tag := image[colon+1:]
	if tag == "latest" {
		return "", fmt.Errorf("image %s: pin a version, not latest", image)
	}
	return tag, nil
}

// checkLayout returns every problem found in one layout.
func checkLayout(l *layout) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("layout %s: "+format, append([]any{l.name}, args...)...))
	}
	ss := l.statefulSet
	spec := &ss.Spec.Template.Spec
	podLabels := ss.Spec.Template.Labels

	// Selectors.
	if ss.Spec.Selector == nil || !labelsMatch(ss.Spec.Selector.MatchLabels, podLabels) {
		bad("StatefulSet %s: selector does not match its pod template's labels", ss.Name)
	}
	if ss.Spec.ServiceName != l.service.Name {
		bad("StatefulSet %s: serviceName %q, but the layout's Service is %q", ss.Name, ss.Spec.ServiceName, l.service.Name)
	}
	if l.service.Spec.ClusterIP != corev1.ClusterIPNone {
		bad("Service %s: the governing Service of a StatefulSet is headless (clusterIP: None)", l.service.Name)
	}
	if !labelsMatch(l.service.Spec.Selector, podLabels) {
		bad("Service %s: selector does not match the pods", l.service.Name)
	}
	if l.pdb.Spec.Selector == nil || !labelsMatch(l.pdb.Spec.Selector.MatchLabels, podLabels) {
		bad("PodDisruptionBudget %s: selector does not match the pods", l.pdb.Name)
	}
	if l.pdb.Spec.MaxUnavailable == nil && l.pdb.Spec.MinAvailable == nil {
		bad("PodDisruptionBudget %s: set maxUnavailable or minAvailable", l.pdb.Name)
	}

	// Ports: all containers of a pod share one network namespace.
	portOwner := map[int32]string{}
	portByName := map[string]int32{}
	for _, c := range containers(spec) {
		if msgs := validation.IsDNS1123Label(c.Name); len(msgs) > 0 {
			bad("container name %q: %s", c.Name, strings.Join(msgs, "; "))
		}
		for _, p := range c.Ports {
			if other, dup := portOwner[p.ContainerPort]; dup {
				bad("container %s: port %d is used by %s too", c.Name, p.ContainerPort, other)
			}
			portOwner[p.ContainerPort] = c.Name
			if p.Name != "" {
				if msgs := validation.IsValidPortName(p.Name); len(msgs) > 0 {
					bad("container %s: port name %q: %s", c.Name, p.Name, strings.Join(msgs, "; "))
				}
				portByName[p.Name] = p.ContainerPort
			}
		}
	}
	for _, sp := range l.service.Spec.Ports {
		if sp.TargetPort.Type == intstr.String {
			if _, ok := portByName[sp.TargetPort.StrVal]; !ok {
				bad("Service %s: targetPort %q is no container port of the pods", l.service.Name, sp.TargetPort.StrVal)
			}
		} else if _, ok := portOwner[sp.TargetPort.IntVal]; !ok {
			bad("Service %s: targetPort %d is no container port of the pods", l.service.Name, sp.TargetPort.IntVal)
		}
	}

	// The pod: security and the grace period.
	psc := spec.SecurityContext
	if psc == nil || psc.RunAsNonRoot == nil || !*psc.RunAsNonRoot {
		bad("pod securityContext.runAsNonRoot must be true")
	}
	if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser == 0 {
		bad("pod securityContext.runAsUser must name a non-root user")
	}
	if psc == nil || psc.FSGroup == nil {
		bad("pod securityContext.fsGroup must be set, or the non-root user cannot write the WAL volume")
	}

	// The claims that hold the WAL.
	claims := map[string]bool{}
	for _, pvc := range ss.Spec.VolumeClaimTemplates {
		claims[pvc.Name] = true
	}
	rp := ss.Spec.PersistentVolumeClaimRetentionPolicy
	if rp == nil || rp.WhenDeleted != "Retain" || rp.WhenScaled != "Retain" {
		bad("persistentVolumeClaimRetentionPolicy must be whenDeleted: Retain and whenScaled: Retain: the WAL holds the only copy of rows not yet in the table")
	}
	podVolumes := map[string]corev1.Volume{}
	for _, v := range spec.Volumes {
		podVolumes[v.Name] = v
	}

	// Each container.
	roleContainer := map[string]string{}
	var drainSeconds float64
	for _, c := range containers(spec) {
		restartable := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		isInit := slices.ContainsFunc(spec.InitContainers, func(ic corev1.Container) bool { return ic.Name == c.Name })
		if len(c.Args) == 0 {
			bad("container %s: no args: which subcommand does it run?", c.Name)
			continue
		}
		processes, ok := subcommands[c.Args[0]]
		if !ok {
			bad("container %s: %q is not an ingestor subcommand", c.Name, c.Args[0])
			continue
		}
		if len(c.Command) > 0 {
			bad("container %s: sets command; the image's entrypoint is the ingestor binary", c.Name)
		}
		if isInit && !restartable {
			bad("container %s: runs the %s as a plain init container, which never completes; use restartPolicy: Always", c.Name, c.Args[0])
		}
		for _, p := range processes {
			if p == metrics.Supervisor {
				continue
			}
			if other, dup := roleContainer[p]; dup {
				bad("the %s runs in both %s and %s", p, other, c.Name)
			}
			roleContainer[p] = c.Name
		}

		cfg, err := l.ingestorConfig(c)
		if err != nil {
			bad("%v", err)
			continue
		}
		drainSeconds = max(drainSeconds, cfg.DrainTimeout().Seconds())
		errs = append(errs, checkContainerPorts(l.name, c, cfg, processes)...)

		// The WAL volume.
		walDir := filepath.Clean(cfg.Ingestion.WAL.Dir)
		var walMount *corev1.VolumeMount
		for i, vm := range c.VolumeMounts {
			if filepath.Clean(vm.MountPath) == walDir {
				walMount = &c.VolumeMounts[i]
			}
		}
		switch {
		case walMount == nil:
			bad("container %s: no volume mounted at the WAL directory %s (ingestion.wal.dir)", c.Name, walDir)
		case !claims[walMount.Name]:
			bad("container %s: the WAL directory is on volume %s, which is not a volume claim of the StatefulSet: the WAL must outlive the pod", c.Name, walMount.Name)
		case walMount.ReadOnly || walMount.SubPath != "":
			bad("container %s: the WAL volume must be mounted whole and writable", c.Name)
		default:
			if _, shadowed := podVolumes[walMount.Name]; shadowed {
				bad("pod volume %s shadows the volume claim of the same name", walMount.Name)
			}
		}

		// Security.
		sc := c.SecurityContext
		if sc == nil || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			bad("container %s: securityContext.allowPrivilegeEscalation must be false", c.Name)
		}
		if sc != nil && sc.RunAsUser != nil && *sc.RunAsUser == 0 {
			bad("container %s: runs as root", c.Name)
		}
		if sc != nil && sc.RunAsNonRoot != nil && !*sc.RunAsNonRoot {
			bad("container %s: securityContext.runAsNonRoot is false", c.Name)
		}
		if sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
			// The supervisor and go-plugin put Unix sockets in $TMPDIR.
			tmp := slices.IndexFunc(c.VolumeMounts, func(vm corev1.VolumeMount) bool { return filepath.Clean(vm.MountPath) == "/tmp" && !vm.ReadOnly })
			if tmp < 0 || podVolumes[c.VolumeMounts[tmp].Name].EmptyDir == nil {
				bad("container %s: a read-only root filesystem needs a writable /tmp (an emptyDir)", c.Name)
			}
		}

		// Resources.
		for _, r := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
			q, ok := c.Resources.Requests[r]
			if !ok || q.IsZero() {
				bad("container %s: no %s request", c.Name, r)
			}
		}
		if lim, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			if req := c.Resources.Requests[corev1.ResourceMemory]; lim.Cmp(req) < 0 {
				bad("container %s: memory limit %s below its request %s", c.Name, lim.String(), req.String())
			}
		}

		// Credentials.
		errs = append(errs, checkSecretRefs(l, c)...)
	}
	for _, r := range role.All {
		if _, ok := roleContainer[r]; !ok {
			bad("no container runs the %s", r)
		}
	}

	// The kubelet must not kill the pod before the drain ends by itself.
	grace := int64(corev1.DefaultTerminationGracePeriodSeconds)
	if spec.TerminationGracePeriodSeconds != nil {
		grace = *spec.TerminationGracePeriodSeconds
	}
	if float64(grace) < drainSeconds+drainMargin {
		bad("terminationGracePeriodSeconds %d leaves less than %d s after ingestion.drainTimeoutSeconds %v", grace, drainMargin, drainSeconds)
	}

	// Termination order follows the record path.
	errs = append(errs, checkTerminationOrder(l.name, spec)...)

	// Claims.
	for _, pvc := range ss.Spec.VolumeClaimTemplates {
		if !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOnce) && !slices.Contains(pvc.Spec.AccessModes, corev1.ReadWriteOncePod) {
			bad("volume claim %s: want access mode ReadWriteOnce: each pod has its own WAL", pvc.Name)
		}
		if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) < 0 {
			bad("volume claim %s: storage request %s is too small for a WAL", pvc.Name, q.String())
		}
	}
	return errs
}

// checkContainerPorts checks that a container declares the metrics port of
// every process it runs, that those listen where the kubelet can reach
// them, and that its probes ask one of them for /healthz.
func checkContainerPorts(layoutName string, c corev1.Container, cfg *config.Config, processes []string) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("layout %s: container %s: "+format, append([]any{layoutName, c.Name}, args...)...))
	}
	served := map[int32]string{} // port -> process
	for _, p := range processes {
		addr, err := metrics.RoleAddress(cfg, p)
		if err != nil {
			bad("%v", err)
			continue
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			bad("metrics address of the %s %q: %v", p, addr, err)
			continue
		}
		if ip := net.ParseIP(host); host == "localhost" || (ip != nil && ip.IsLoopback()) {
			bad("the %s's metrics address %s is on loopback: the kubelet's probes and Prometheus come from outside the pod", p, addr)
		}
		port, _ := strconv.Atoi(portText)
		if port == 0 {
			bad("the %s's metrics address %s picks a random port, which no probe can find", p, addr)
			continue
		}
		if !slices.ContainsFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.ContainerPort == int32(port) }) {
			bad("no container port %d for the %s's metrics", port, p)
		}
		served[int32(port)] = p
	}
	probes := []struct {
		name     string
		probe    *corev1.Probe
		required bool
	}{
		{"livenessProbe", c.LivenessProbe, true},
		{"readinessProbe", c.ReadinessProbe, true},
		{"startupProbe", c.StartupProbe, false},
	}
	for _, p := range probes {
		if p.probe == nil {
			if p.required {
				bad("no %s", p.name)
			}
			continue
		}
		h := p.probe.HTTPGet
		if h == nil {
			bad("%s: want an httpGet of %s", p.name, healthPath)
			continue
		}
		if h.Path != healthPath {
			bad("%s: path %q, want %s", p.name, h.Path, healthPath)
		}
		port := h.Port.IntVal
		if h.Port.Type == intstr.String {
			i := slices.IndexFunc(c.Ports, func(cp corev1.ContainerPort) bool { return cp.Name == h.Port.StrVal })
			if i < 0 {
				bad("%s: the container has no port named %q", p.name, h.Port.StrVal)
				continue
			}
			port = c.Ports[i].ContainerPort
		}
		if _, ok := served[port]; !ok {
			bad("%s: port %d is not the metrics port of a process this container runs (%v)", p.name, port, served)
		}
	}
	return errs
}

// checkSecretRefs checks that every Secret and ConfigMap key a container's
// environment names exists.
func checkSecretRefs(l *layout, c corev1.Container) []error {
	var errs []error
	bad := func(format string, args ...any) {
		errs = append(errs, fmt.Errorf("layout %s: container %s: "+format, append([]any{l.name, c.Name}, args...)...))
	}
	for _, e := range c.Env {
		if e.ValueFrom == nil {
			continue
		}
		if ref := e.ValueFrom.SecretKeyRef; ref != nil {
			if ref.Optional != nil && *ref.Optional {
				bad("env %s: an optional Secret key would let the ingestor start without its credential", e.Name)
			}
			s, ok := l.secrets[ref.Name]
			if !ok {
				bad("env %s: no Secret %s", e.Name, ref.Name)
				continue
			}
			_, inData := s.Data[ref.Key]
			_, inStringData := s.StringData[ref.Key]
			if !inData && !inStringData {
				bad("env %s: Secret %s has no key %q", e.Name, ref.Name, ref.Key)
			}
		}
		if ref := e.ValueFrom.ConfigMapKeyRef; ref != nil {
			cm, ok := l.configMaps[ref.Name]
			if !ok {
				bad("env %s: no ConfigMap %s", e.Name, ref.Name)
				continue
			}
			if _, ok := cm.Data[ref.Key]; !ok {
				bad("env %s: ConfigMap %s has no key %q", e.Name, ref.Name, ref.Key)
			}
		}
	}
	for _, ef := range c.EnvFrom {
		if ef.SecretRef != nil {
			if _, ok := l.secrets[ef.SecretRef.Name]; !ok {
				bad("envFrom: no Secret %s", ef.SecretRef.Name)
			}
		}
	}
	return errs
}

// terminationStages returns when the kubelet sends each container its
// SIGTERM as a stage number: all main containers at stage 0, then the
// native sidecars (restartable init containers) one at a time in reverse
// order of the spec, each after every container after it has exited.
func terminationStages(spec *corev1.PodSpec) map[string]int {
	stages := map[string]int{}
	for _, c := range spec.Containers {
		stages[c.Name] = 0
	}
	stage := 0
	for i := len(spec.InitContainers) - 1; i >= 0; i-- {
		c := spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			stage++
			stages[c.Name] = stage
		}
	}
	return stages
}

// checkTerminationOrder checks that no role gets its SIGTERM before a role
// upstream of it in the record path. Each role's drain waits until the
// roles before it have released their WAL locks, so a committer stopped
// before the uploader would wait for a lock that is only released after
// the committer exits, and spend its whole drain budget waiting.
func checkTerminationOrder(layoutName string, spec *corev1.PodSpec) []error {
	stages := terminationStages(spec)
	roleStage := map[string]int{}
	for _, c := range containers(spec) {
		if len(c.Args) == 0 {
			continue
		}
		for _, p := range subcommands[c.Args[0]] {
			roleStage[p] = stages[c.Name]
		}
	}
	var errs []error
	for i := 0; i+1 < len(role.All); i++ {
		up, down := role.All[i], role.All[i+1]
		su, okU := roleStage[up]
		sd, okD := roleStage[down]
		if okU && okD && sd < su {
			errs = append(errs, fmt.Errorf("layout %s: termination order: the %s stops before the %s, whose files it waits for", layoutName, down, up))
		}
	}
	return errs
}

func ptr[T any](v T) *T { return &v }
