package deploy

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"maps"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	promparser "github.com/prometheus/prometheus/promql/parser"

	"github.com/icewal/ingestor/shared/metrics"
)

// metricInfo is what the code registers under one metric name.
type metricInfo struct {
	kind   string          // counter, gauge, histogram, summary
	labels map[string]bool // variable and constant labels
	where  string          // file:line of the registration
}

// pendingMetrics are metrics the dashboard and the alerts use before the
// code exports them. Each entry goes once the code registers the metric;
// TestPendingMetricsStillPending says when.
var pendingMetrics = map[string]metricInfo{
	"ingestor_consumer_lag_records":           {kind: "gauge", labels: set("dataset", "partition")},
	"ingestor_consumer_wal_volume_used_ratio": {kind: "gauge", labels: set()},
	"ingestor_consumer_paused":                {kind: "gauge", labels: set("dataset")},
}

// targetLabels are the labels Prometheus adds to every series it scrapes
// from a Kubernetes pod (prometheus-operator's ServiceMonitor and
// PodMonitor, or kubernetes_sd with the usual relabelling).
var targetLabels = set("namespace", "pod", "container", "service", "endpoint", "job", "instance")

func set(names ...string) map[string]bool {
	m := map[string]bool{}
	for _, n := range names {
		m[n] = true
	}
	return m
}

// constructors maps the client_golang constructors to the kind of metric
// they make.
var constructors = map[string]string{
	"NewCounter": "counter", "NewCounterVec": "counter", "NewCounterFunc": "counter",
	"NewGauge": "gauge", "NewGaugeVec": "gauge", "NewGaugeFunc": "gauge",
	"NewHistogram": "histogram", "NewHistogramVec": "histogram",
	"NewSummary": "summary", "NewSummaryVec": "summary",
}

// registeredMetrics reads every metric the ingestor's Go sources register
// (Name: "..." in the options of a prometheus.New* call, with the label
// names of the *Vec constructors and the ConstLabels), and the runtime and
// process metrics of the registry every process uses.
func registeredMetrics(t *testing.T) map[string]metricInfo {
	t.Helper()
	found := map[string]metricInfo{}
	fset := token.NewFileSet()
	dirs := map[string][]*ast.File{}
	err := filepath.WalkDir(repoRoot, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case "node_modules", "testdata", "vendor", ".git", "deploy", "bin":
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
		if err != nil {
			return err
		}
		dirs[filepath.Dir(path)] = append(dirs[filepath.Dir(path)], f)
		return nil
	})
	if err != nil {
		t.Fatalf("read the Go sources: %v", err)
	}
	for _, files := range dirs {
		consts := packageStringConsts(files)
		str := func(e ast.Expr) (string, bool) {
			switch v := e.(type) {
			case *ast.BasicLit:
				s, err := strconv.Unquote(v.Value)
				return s, err == nil
			case *ast.Ident:
				s, ok := consts[v.Name]
				return s, ok
			}
			return "", false
		}
		for _, f := range files {
			ast.Inspect(f, func(n ast.Node) bool {
				call, ok := n.(*ast.CallExpr)
				if !ok || len(call.Args) == 0 {
					return true
				}
				sel, ok := call.Fun.(*ast.SelectorExpr)
				if !ok {
					return true
				}
				if pkg, ok := sel.X.(*ast.Ident); !ok || pkg.Name != "prometheus" {
					return true
				}
				kind, ok := constructors[sel.Sel.Name]
				if !ok {
					return true
				}
				opts, ok := call.Args[0].(*ast.CompositeLit)
				if !ok {
					return true
				}
				where := fset.Position(call.Pos()).String()
				info := metricInfo{kind: kind, labels: map[string]bool{}, where: where}
				var name string
				for _, el := range opts.Elts {
					kv, ok := el.(*ast.KeyValueExpr)
					if !ok {
						continue
					}
					switch key, _ := kv.Key.(*ast.Ident); {
					case key == nil:
					case key.Name == "Name":
						if name, ok = str(kv.Value); !ok {
							t.Errorf("%s: the metric's Name is not a string constant; the deployment tests cannot check dashboards against it", where)
						}
					case key.Name == "Namespace" || key.Name == "Subsystem":
						t.Errorf("%s: Namespace/Subsystem split the metric's name; write the whole name in Name", where)
					case key.Name == "ConstLabels":
						if lit, ok := kv.Value.(*ast.CompositeLit); ok {
							for _, cl := range lit.Elts {
								if ckv, ok := cl.(*ast.KeyValueExpr); ok {
									if l, ok := str(ckv.Key); ok {
										info.labels[l] = true
									}
								}
							}
						}
					}
				}
				if name == "" {
					return true
				}
				if strings.HasSuffix(sel.Sel.Name, "Vec") {
					lit, ok := call.Args[len(call.Args)-1].(*ast.CompositeLit)
					if !ok {
						t.Errorf("%s: the label names of %s are not a literal list", where, name)
						return true
					}
					for _, el := range lit.Elts {
						l, ok := str(el)
						if !ok {
							t.Errorf("%s: a label name of %s is not a string constant", where, name)
							continue
						}
						info.labels[l] = true
					}
				}
				if prev, dup := found[name]; dup && (prev.kind != info.kind || !maps.Equal(prev.labels, info.labels)) {
					t.Errorf("metric %s is registered twice with different kinds or labels: %s and %s", name, prev.where, where)
				}
				found[name] = info
				return true
			})
		}
	}

	// The Go runtime and process collectors of every process's registry.
	mfs, err := metrics.NewRegistry("deploy-test").Gather()
	if err != nil {
		t.Fatalf("gather the shared registry: %v", err)
	}
	for _, mf := range mfs {
		if _, ok := found[mf.GetName()]; ok {
			continue
		}
		info := metricInfo{kind: strings.ToLower(mf.GetType().String()), labels: map[string]bool{}, where: "shared/metrics.NewRegistry"}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				info.labels[lp.GetName()] = true
			}
		}
		found[mf.GetName()] = info
	}
	return found
}

// packageStringConsts collects the string constants declared at the top
// level of a package's files.
func packageStringConsts(files []*ast.File) map[string]string {
	consts := map[string]string{}
	for _, f := range files {
		for _, decl := range f.Decls {
			gd, ok := decl.(*ast.GenDecl)
			if !ok || gd.Tok != token.CONST {
				continue
			}
			for _, spec := range gd.Specs {
				vs := spec.(*ast.ValueSpec)
				for i, n := range vs.Names {
					if i < len(vs.Values) {
						if lit, ok := vs.Values[i].(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, err := strconv.Unquote(lit.Value); err == nil {
								consts[n.Name] = s
							}
						}
					}
				}
			}
		}
	}
	return consts
}

// knownMetrics are the registered metrics, plus the pending ones not yet
// registered.
func knownMetrics(t *testing.T) map[string]metricInfo {
	t.Helper()
	known := registeredMetrics(t)
	for name, info := range pendingMetrics {
		if _, ok := known[name]; !ok {
			info.where = "pendingMetrics"
			known[name] = info
		}
	}
	return known
}

// seriesLabels returns the labels of the series a selector name selects:
// a metric, or one of a histogram's or summary's _bucket, _sum and _count
// series.
func seriesLabels(known map[string]metricInfo, name string) (map[string]bool, bool) {
	with := func(info metricInfo, extra ...string) map[string]bool {
		out := maps.Clone(info.labels)
		maps.Copy(out, targetLabels)
		for _, e := range extra {
			out[e] = true
		}
		return out
	}
	if info, ok := known[name]; ok {
		switch info.kind {
		case "summary":
			return with(info, "quantile"), true
		case "histogram":
			// A native histogram is selected by its own name.
			return with(info), true
		}
		return with(info), true
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		base, ok := strings.CutSuffix(name, suffix)
		if !ok {
			continue
		}
		if info, ok := known[base]; ok && (info.kind == "histogram" || info.kind == "summary") {
			if suffix == "_bucket" {
				if info.kind != "histogram" {
					return nil, false
				}
				return with(info, "le"), true
			}
			return with(info), true
		}
	}
	return nil, false
}

// exprChecker checks one PromQL expression against the known metrics.
type exprChecker struct {
	known map[string]metricInfo
	errs  []error
}

func (c *exprChecker) bad(format string, args ...any) {
	c.errs = append(c.errs, fmt.Errorf(format, args...))
}

// checkExpr parses expr and checks every metric and label it names; it
// returns the labels of the expression's result (nil if it fails).
func checkExpr(known map[string]metricInfo, expr string) (map[string]bool, []error) {
	e, err := promparser.NewParser(promparser.Options{}).ParseExpr(expr)
	if err != nil {
		return nil, []error{fmt.Errorf("parse: %w", err)}
	}
	c := &exprChecker{known: known}
	out := c.labels(e)
	return out, c.errs
}

// subset reports the names in want that are not in have.
func missing(want []string, have map[string]bool) []string {
	var out []string
	for _, w := range want {
		if !have[w] {
			out = append(out, w)
		}
	}
	return out
}

// labels returns the label names of the result of e, checking e's parts
// along the way. Scalars have no labels.
func (c *exprChecker) labels(e promparser.Expr) map[string]bool {
	switch n := e.(type) {
	case *promparser.VectorSelector:
		if n.Name == "" {
			c.bad("selector %s names no metric", n)
			return map[string]bool{}
		}
		ls, ok := seriesLabels(c.known, n.Name)
		if !ok {
			c.bad("metric %s is not registered by the code", n.Name)
			return map[string]bool{}
		}
		for _, m := range n.LabelMatchers {
			if m.Name != "__name__" && !ls[m.Name] {
				c.bad("%s has no label %q", n.Name, m.Name)
			}
		}
		return ls
	case *promparser.MatrixSelector:
		return c.labels(n.VectorSelector)
	case *promparser.SubqueryExpr:
		return c.labels(n.Expr)
	case *promparser.ParenExpr:
		return c.labels(n.Expr)
	case *promparser.StepInvariantExpr:
		return c.labels(n.Expr)
	case *promparser.UnaryExpr:
		return c.labels(n.Expr)
	case *promparser.NumberLiteral, *promparser.StringLiteral:
		return map[string]bool{}
	case *promparser.Call:
		var args []map[string]bool
		for _, a := range n.Args {
			args = append(args, c.labels(a))
		}
		switch n.Func.Name {
		case "time", "vector", "scalar", "absent", "absent_over_time", "pi":
			return map[string]bool{}
		case "histogram_quantile":
			out := maps.Clone(args[1])
			if !out["le"] {
				c.bad("histogram_quantile over %s, whose series have no le label", n.Args[1])
			}
			delete(out, "le")
			return out
		case "label_replace", "label_join":
			out := maps.Clone(args[0])
			if dst, ok := n.Args[1].(*promparser.StringLiteral); ok {
				out[dst.Val] = true
			}
			return out
		}
		for i, a := range n.Args {
			if t := a.Type(); t == promparser.ValueTypeVector || t == promparser.ValueTypeMatrix {
				return args[i]
			}
		}
		return map[string]bool{}
	case *promparser.AggregateExpr:
		inner := c.labels(n.Expr)
		if n.Param != nil {
			c.labels(n.Param)
		}
		if m := missing(n.Grouping, inner); len(m) > 0 {
			c.bad("%s by/without %v: the series aggregated have no label %v", n.Op, n.Grouping, m)
		}
		switch n.Op {
		case promparser.TOPK, promparser.BOTTOMK, promparser.LIMITK, promparser.LIMIT_RATIO:
			return inner
		}
		if n.Without {
			out := maps.Clone(inner)
			for _, g := range n.Grouping {
				delete(out, g)
			}
			return out
		}
		return set(n.Grouping...)
	case *promparser.BinaryExpr:
		lhs, rhs := c.labels(n.LHS), c.labels(n.RHS)
		lt, rt := n.LHS.Type(), n.RHS.Type()
		if lt == promparser.ValueTypeScalar {
			return rhs
		}
		if rt == promparser.ValueTypeScalar {
			return lhs
		}
		vm := n.VectorMatching
		if vm == nil {
			return lhs
		}
		if vm.On {
			if m := missing(vm.MatchingLabels, lhs); len(m) > 0 {
				c.bad("on %v: the left side has no label %v", vm.MatchingLabels, m)
			}
			if m := missing(vm.MatchingLabels, rhs); len(m) > 0 {
				c.bad("on %v: the right side has no label %v", vm.MatchingLabels, m)
			}
		}
		switch n.Op {
		case promparser.LAND, promparser.LUNLESS:
			return lhs
		case promparser.LOR:
			out := maps.Clone(lhs)
			maps.Copy(out, rhs)
			return out
		}
		many, one := lhs, rhs
		if vm.Card == promparser.CardOneToMany {
			many, one = rhs, lhs
		}
		if m := missing(vm.Include, one); len(m) > 0 {
			c.bad("group_left/group_right %v: the \"one\" side has no label %v", vm.Include, m)
		}
		out := maps.Clone(many)
		if vm.Card == promparser.CardOneToOne {
			if vm.On {
				out = set(vm.MatchingLabels...)
			} else {
				for _, l := range vm.MatchingLabels {
					delete(out, l)
				}
			}
		}
		for _, l := range vm.Include {
			out[l] = true
		}
		return out
	}
	c.bad("expression %s: node %T is not one the test knows", e, e)
	return map[string]bool{}
}
