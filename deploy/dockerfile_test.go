package deploy

import (
	"debug/elf"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/icewal/ingestor/shared/config"
	"github.com/icewal/ingestor/shared/metrics"
)

// instruction is one Dockerfile instruction, continuation lines joined.
type instruction struct {
	line int    // 1-based line where it starts
	cmd  string // upper case: FROM, RUN, COPY, ...
	args string // the rest of the line
}

// stage is one FROM and the instructions that follow it.
type stage struct {
	image, name string
	body        []instruction
}

// parseDockerfile splits a Dockerfile into stages. It knows what this
// Dockerfile uses: comments, parser directives, backslash continuations.
func parseDockerfile(text string) ([]stage, error) {
	var (
		stages []stage
		cur    *instruction
		start  int
	)
	var insts []instruction
	for i, line := range strings.Split(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if cur == nil && (trimmed == "" || strings.HasPrefix(trimmed, "#")) {
			continue
		}
		if cur != nil && strings.HasPrefix(trimmed, "#") {
			continue // comments may sit between continuation lines
		}
		cont := strings.HasSuffix(trimmed, "\\")
		trimmed = strings.TrimSuffix(trimmed, "\\")
		if cur == nil {
			start = i + 1
			cmd, args, _ := strings.Cut(trimmed, " ")
			cur = &instruction{line: start, cmd: strings.ToUpper(cmd), args: strings.TrimSpace(args)}
		} else {
			cur.args = strings.TrimSpace(cur.args + " " + trimmed)
		}
		if !cont {
			insts = append(insts, *cur)
			cur = nil
		}
	}
	if cur != nil {
		return nil, fmt.Errorf("line %d: continuation at the end of the file", start)
	}
	for _, in := range insts {
		if in.cmd == "FROM" {
			f := strings.Fields(in.args)
			s := stage{image: f[0]}
			if len(f) == 3 && strings.EqualFold(f[1], "AS") {
				s.name = f[2]
			} else if len(f) != 1 {
				return nil, fmt.Errorf("line %d: FROM %s: want IMAGE [AS NAME]", in.line, in.args)
			}
			stages = append(stages, s)
			continue
		}
		if len(stages) == 0 {
			return nil, fmt.Errorf("line %d: %s before the first FROM", in.line, in.cmd)
		}
		stages[len(stages)-1].body = append(stages[len(stages)-1].body, in)
	}
	if len(stages) == 0 {
		return nil, fmt.Errorf("no FROM")
	}
	return stages, nil
}

// shellWords splits a shell command line into words, with single and
// double quotes; it refuses what it does not understand rather than guess.
func shellWords(s string) ([]string, error) {
	var (
		words []string
		cur   strings.Builder
		in    rune // the open quote, or 0
		word  bool
	)
	for _, r := range s {
		switch {
		case in != 0 && r == in:
			in = 0
		case in != 0:
			cur.WriteRune(r)
		case r == '"' || r == '\'':
			in, word = r, true
		case r == ' ' || r == '\t':
			if word {
				words = append(words, cur.String())
				cur.Reset()
				word = false
			}
		case strings.ContainsRune("$`;&|<>()\\", r):
			return nil, fmt.Errorf("shell syntax %q in %q: the test does not interpret it", r, s)
		default:
			cur.WriteRune(r)
			word = true
		}
	}
	if in != 0 {
		return nil, fmt.Errorf("unclosed quote in %q", s)
	}
	if word {
		words = append(words, cur.String())
	}
	return words, nil
}

// goBuild is the build command of the Dockerfile's RUN, taken apart.
type goBuild struct {
	env    []string // NAME=value assignments before `go`
	flags  []string // the arguments of `go build` but -o and the package
	output string   // -o
	pkg    string   // the package built
}

var mountFlag = regexp.MustCompile(`^--mount=\S+\s*`)

// parseGoBuild reads `[NAME=value...] go build FLAGS -o OUT PKG` from a RUN.
func parseGoBuild(run string) (goBuild, error) {
	for mountFlag.MatchString(run) {
		run = mountFlag.ReplaceAllString(run, "")
	}
	words, err := shellWords(run)
	if err != nil {
		return goBuild{}, err
	}
	var b goBuild
	i := 0
	for ; i < len(words) && strings.Contains(words[i], "="); i++ {
		b.env = append(b.env, words[i])
	}
	if len(words) < i+3 || words[i] != "go" || words[i+1] != "build" {
		return goBuild{}, fmt.Errorf("RUN %s: want [NAME=value...] go build ...", run)
	}
	rest := words[i+2:]
	for j := 0; j < len(rest); j++ {
		switch {
		case rest[j] == "-o" && j+1 < len(rest):
			b.output = rest[j+1]
			j++
		case j == len(rest)-1 && !strings.HasPrefix(rest[j], "-"):
			b.pkg = rest[j]
		default:
			b.flags = append(b.flags, rest[j])
		}
	}
	if b.output == "" || b.pkg == "" {
		return goBuild{}, fmt.Errorf("RUN %s: want -o OUTPUT and one package", run)
	}
	return b, nil
}

// dockerImage is what the tests need from the Dockerfile.
type dockerImage struct {
	build      stage
	final      stage
	goBuild    goBuild
	user       string
	entrypoint []string
	cmd        []string
	exposed    []int
	volumes    []string
	binary     string // where the final stage puts the binary
}

func readDockerfile(t *testing.T) dockerImage {
	t.Helper()
	b, err := os.ReadFile(dockerfile)
	if err != nil {
		t.Fatal(err)
	}
	stages, err := parseDockerfile(string(b))
	if err != nil {
		t.Fatalf("%s: %v", dockerfile, err)
	}
	if len(stages) < 2 {
		t.Fatalf("%s: want a build stage and a final stage, got %d stage(s)", dockerfile, len(stages))
	}
	img := dockerImage{build: stages[0], final: stages[len(stages)-1]}
	var builds []string
	for _, in := range img.build.body {
		if in.cmd == "RUN" && strings.Contains(in.args, "go build") {
			builds = append(builds, in.args)
		}
	}
	if len(builds) != 1 {
		t.Fatalf("%s: want one RUN with go build in the first stage, got %d", dockerfile, len(builds))
	}
	if img.goBuild, err = parseGoBuild(builds[0]); err != nil {
		t.Fatal(err)
	}
	for _, in := range img.final.body {
		switch in.cmd {
		case "USER":
			img.user = in.args
		case "ENTRYPOINT":
			img.entrypoint = execForm(t, in)
		case "CMD":
			img.cmd = execForm(t, in)
		case "EXPOSE":
			for _, f := range strings.Fields(in.args) {
				p, err := strconv.Atoi(strings.TrimSuffix(f, "/tcp"))
				if err != nil {
					t.Fatalf("%s:%d: EXPOSE %s: %v", dockerfile, in.line, f, err)
				}
				img.exposed = append(img.exposed, p)
			}
		case "VOLUME":
			img.volumes = append(img.volumes, execForm(t, in)...)
		case "COPY":
			f := strings.Fields(in.args)
			from := slices.ContainsFunc(f, func(s string) bool { return s == "--from="+img.build.name })
			if from && len(f) >= 2 && f[len(f)-2] == img.goBuild.output {
				img.binary = f[len(f)-1]
			}
		}
	}
	return img
}

// execForm parses the JSON-array form of ENTRYPOINT, CMD or VOLUME; the
// shell form would run the ingestor under /bin/sh, which does not pass it
// SIGTERM (and the final image has no shell).
func execForm(t *testing.T, in instruction) []string {
	t.Helper()
	s := strings.TrimSpace(in.args)
	if !strings.HasPrefix(s, "[") || !strings.HasSuffix(s, "]") {
		t.Fatalf("%s:%d: %s %s: use the exec form [\"...\"]", dockerfile, in.line, in.cmd, s)
	}
	var out []string
	for _, part := range strings.Split(strings.Trim(s, "[]"), ",") {
		v, err := strconv.Unquote(strings.TrimSpace(part))
		if err != nil {
			t.Fatalf("%s:%d: %s: %v", dockerfile, in.line, in.cmd, err)
		}
		out = append(out, v)
	}
	return out
}

// TestDockerfileStages checks the parts of the Dockerfile that Kubernetes
// and the code rely on, without a Docker engine.
func TestDockerfileStages(t *testing.T) {
	img := readDockerfile(t)

	// The build stage's Go is the one go.mod asks for.
	goLine := regexp.MustCompile(`(?m)^go (\d+\.\d+)`).FindSubmatch(readRepoFile(t, "go.mod"))
	if goLine == nil {
		t.Fatal("go.mod: no go line")
	}
	if want := "golang:" + string(goLine[1]); img.build.image != want && !strings.HasPrefix(img.build.image, want+".") && !strings.HasPrefix(img.build.image, want+"-") {
		t.Errorf("build stage FROM %s, want %s (go.mod says go %s)", img.build.image, want, goLine[1])
	}
	if img.build.name == "" {
		t.Errorf("build stage has no name for COPY --from")
	}

	// A static binary of cmd/ingestor.
	b := img.goBuild
	if !slices.Contains(b.env, "CGO_ENABLED=0") {
		t.Errorf("go build without CGO_ENABLED=0: the final image has no C library")
	}
	if !slices.Contains(b.flags, "-trimpath") {
		t.Errorf("go build without -trimpath: the binary would carry the builder's paths")
	}
	if b.pkg != "./cmd/ingestor" {
		t.Errorf("go build %s, want ./cmd/ingestor", b.pkg)
	}

	// The final stage: small, non-root, the binary as entrypoint.
	switch {
	case img.final.image == "scratch":
	case strings.HasPrefix(img.final.image, "gcr.io/distroless/static"):
	default:
		t.Errorf("final stage FROM %s: want a distroless static image or scratch", img.final.image)
	}
	uid, err := nonRootUID(img.user)
	if err != nil {
		t.Errorf("final stage USER %q: %v", img.user, err)
	}
	if img.binary == "" {
		t.Errorf("final stage copies no %s from stage %s", b.output, img.build.name)
	}
	if len(img.entrypoint) != 1 || img.entrypoint[0] != img.binary {
		t.Errorf("ENTRYPOINT %q, want [%q]: the manifests give only args", img.entrypoint, img.binary)
	}

	// What the manifests and the shipped configuration expect of the image.
	l := loadLayout(t, "process-tree")
	c := l.statefulSet.Spec.Template.Spec.Containers[0]
	cfg, err := l.ingestorConfig(c)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(img.cmd, c.Args) {
		t.Errorf("CMD %q differs from the process-tree container's args %q", img.cmd, c.Args)
	}
	if len(img.volumes) != 1 || filepath.Clean(img.volumes[0]) != filepath.Clean(cfg.Ingestion.WAL.Dir) {
		t.Errorf("VOLUME %q, want the WAL directory %s", img.volumes, cfg.Ingestion.WAL.Dir)
	}
	var want []int
	defaults := &config.Config{Metrics: config.Metrics{Address: config.DefaultMetricsAddress}}
	for _, p := range subcommands["run"] {
		addr, err := metrics.RoleAddress(defaults, p)
		if err != nil {
			t.Fatal(err)
		}
		port, _ := strconv.Atoi(addr[strings.LastIndex(addr, ":")+1:])
		want = append(want, port)
	}
	if !slices.Equal(img.exposed, want) {
		t.Errorf("EXPOSE %v, want the default metrics ports %v", img.exposed, want)
	}
	for _, name := range layouts {
		l := loadLayout(t, name)
		psc := l.statefulSet.Spec.Template.Spec.SecurityContext
		if psc == nil || psc.RunAsUser == nil || *psc.RunAsUser != uid {
			t.Errorf("layout %s: pod runAsUser differs from the image's USER %d", name, uid)
		}
		if psc == nil || psc.FSGroup == nil || *psc.FSGroup != uid {
			t.Errorf("layout %s: pod fsGroup differs from the image's group %d", name, uid)
		}
	}

	// The build context leaves out what go build does not need.
	ignore := string(readRepoFile(t, "deploy/Dockerfile.dockerignore"))
	for _, p := range []string{".git", "node_modules", "bin"} {
		if !slices.Contains(strings.Fields(ignore), p) {
			t.Errorf("Dockerfile.dockerignore does not exclude %s", p)
		}
	}
}

// nonRootUID reads USER uid[:gid] and refuses root and names: Kubernetes
// can only check runAsNonRoot against a numeric user.
func nonRootUID(user string) (int64, error) {
	u, g, _ := strings.Cut(user, ":")
	uid, err := strconv.ParseInt(u, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("want a numeric uid")
	}
	if uid == 0 {
		return 0, fmt.Errorf("root")
	}
	if g != "" {
		if gid, err := strconv.ParseInt(g, 10, 64); err != nil || gid == 0 {
			return 0, fmt.Errorf("want a numeric, non-root gid")
		}
	}
	return uid, nil
}

// TestDockerfileParsing checks the parsers above on the forms they must
// accept and refuse.
func TestDockerfileParsing(t *testing.T) {
	b, err := parseGoBuild(`--mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build CGO_ENABLED=0 GOOS=linux go build -trimpath -ldflags "-s -w" -o /out/x ./cmd/x`)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(b.env, []string{"CGO_ENABLED=0", "GOOS=linux"}) || !slices.Equal(b.flags, []string{"-trimpath", "-ldflags", "-s -w"}) || b.output != "/out/x" || b.pkg != "./cmd/x" {
		t.Errorf("parseGoBuild = %+v", b)
	}
	for _, bad := range []string{
		`go build -o /out/x ./cmd/x && rm -rf /`,
		`CGO_ENABLED=$CGO go build -o /out/x ./cmd/x`,
		`go build ./cmd/x`,
		`go vet ./...`,
		`go build -ldflags "-s -w -o /out/x ./cmd/x`,
	} {
		if _, err := parseGoBuild(bad); err == nil {
			t.Errorf("parseGoBuild(%q) accepted it", bad)
		}
	}
	stages, err := parseDockerfile("# syntax=docker/dockerfile:1\nFROM a AS b\nRUN x \\\n  # note\n  y\nFROM c\nUSER 1:1\n")
	if err != nil {
		t.Fatal(err)
	}
	if len(stages) != 2 || stages[0].name != "b" || stages[0].body[0].args != "x y" || stages[1].body[0].cmd != "USER" {
		t.Errorf("parseDockerfile = %+v", stages)
	}
	for _, user := range []string{"root", "0", "0:0", "65532:0", "nonroot", ""} {
		if _, err := nonRootUID(user); err == nil {
			t.Errorf("nonRootUID(%q) accepted it", user)
		}
	}
}

// TestDockerfileBuilds runs the Dockerfile's build command on this
// checkout, with its environment and flags, and checks that the result is
// a static executable that knows the subcommands the manifests run.
// Without a Docker engine this is the part of `docker build` that can fail.
func TestDockerfileBuilds(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the whole binary without cgo: minutes on a cold build cache")
	}
	img := readDockerfile(t)
	out := filepath.Join(t.TempDir(), "ingestor")
	args := append([]string{"build"}, img.goBuild.flags...)
	args = append(args, "-o", out, img.goBuild.pkg)
	cmd := exec.Command("go", args...)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), img.goBuild.env...)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("%s (env %v): %v\n%s", cmd, img.goBuild.env, err, b)
	}

	f, err := elf.Open(out)
	if err != nil {
		t.Fatalf("open the binary: %v", err)
	}
	defer f.Close()
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("the binary asks for a dynamic loader: it would not start on %s", img.final.image)
		}
	}
	if libs, _ := f.ImportedLibraries(); len(libs) > 0 {
		t.Errorf("the binary links %v", libs)
	}
	if f.Section(".symtab") != nil {
		t.Errorf("the binary keeps its symbol table: -ldflags \"-s -w\" missing?")
	}

	// The subcommands the manifests run exist in this binary.
	help, err := exec.Command(out, "help").CombinedOutput()
	if err != nil {
		t.Fatalf("ingestor help: %v\n%s", err, help)
	}
	// One subcommand a line, indented, after "subcommands:".
	var names []string
	for _, m := range regexp.MustCompile(`(?m)^  ([a-z]+)  `).FindAllSubmatch(help, -1) {
		names = append(names, string(m[1]))
	}
	if len(names) == 0 {
		t.Fatalf("ingestor help lists no subcommands:\n%s", help)
	}
	for _, layout := range layouts {
		l := loadLayout(t, layout)
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			if !slices.Contains(names, c.Args[0]) {
				t.Errorf("layout %s: container %s runs subcommand %q, which the binary does not have (%s)", layout, c.Name, c.Args[0], strings.Join(names, ", "))
			}
		}
	}
}
