package deploy

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/template"

	"github.com/prometheus/common/model"
	promparser "github.com/prometheus/prometheus/promql/parser"
)

// ruleFile is a Prometheus rule file: the `groups:` of rule_files, and
// the spec of a prometheus-operator PrometheusRule.
type ruleFile struct {
	Groups []ruleGroup `json:"groups"`
}

type ruleGroup struct {
	Name     string `json:"name"`
	Interval string `json:"interval,omitempty"`
	Rules    []rule `json:"rules"`
}

type rule struct {
	Alert         string            `json:"alert,omitempty"`
	Record        string            `json:"record,omitempty"`
	Expr          string            `json:"expr"`
	For           string            `json:"for,omitempty"`
	KeepFiringFor string            `json:"keep_firing_for,omitempty"`
	Labels        map[string]string `json:"labels,omitempty"`
	Annotations   map[string]string `json:"annotations,omitempty"`
}

// runbookRE is where every alert's runbook lives.
var runbookRE = regexp.MustCompile(`^docs/operations\.md#([a-z0-9-]+)$`)

func readAlerts(t *testing.T) ruleFile {
	t.Helper()
	b, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf ruleFile
	if err := decodeYAMLStrict(b, &rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	if len(rf.Groups) == 0 {
		t.Fatalf("%s: no groups", alertsFile)
	}
	return rf
}

// TestAlertRules checks every rule the way Prometheus loads it, and what an
// on-call person needs from it.
func TestAlertRules(t *testing.T) {
	known := knownMetrics(t)
	rf := readAlerts(t)
	groups, alerts, anchors := map[string]bool{}, map[string]bool{}, map[string]string{}
	for _, g := range rf.Groups {
		if g.Name == "" || groups[g.Name] {
			t.Errorf("group name %q is empty or repeated", g.Name)
		}
		groups[g.Name] = true
		if g.Interval != "" {
			if _, err := model.ParseDuration(g.Interval); err != nil {
				t.Errorf("group %s: interval: %v", g.Name, err)
			}
		}
		for _, r := range g.Rules {
			for _, err := range checkAlert(known, r) {
				t.Errorf("alert %s: %v", r.Alert, err)
			}
			if alerts[r.Alert] {
				t.Errorf("alert %s is defined twice", r.Alert)
			}
			alerts[r.Alert] = true
			if m := runbookRE.FindStringSubmatch(r.Annotations["runbook"]); m != nil {
				if other, dup := anchors[m[1]]; dup {
					t.Errorf("alerts %s and %s share the runbook anchor %s", other, r.Alert, m[1])
				}
				anchors[m[1]] = r.Alert
			}
		}
	}
}

// checkAlert returns the problems of one alerting rule.
func checkAlert(known map[string]metricInfo, r rule) []error {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if r.Alert == "" || r.Record != "" {
		bad("want an alerting rule (alert:), not a recording rule")
	}
	if !regexp.MustCompile(`^Ingestor[A-Z][A-Za-z0-9]+$`).MatchString(r.Alert) {
		bad("name %q: want IngestorSomething", r.Alert)
	}
	out, exprErrs := checkExpr(known, r.Expr)
	for _, err := range exprErrs {
		bad("expr: %v", err)
	}
	for _, d := range []struct{ key, val string }{{"for", r.For}, {"keep_firing_for", r.KeepFiringFor}} {
		if d.val != "" {
			if _, err := model.ParseDuration(d.val); err != nil {
				bad("%s: %v", d.key, err)
			}
		}
	}
	switch r.Labels["severity"] {
	case "warning", "critical":
	default:
		bad("labels.severity %q: want warning or critical", r.Labels["severity"])
	}
	for _, key := range []string{"summary", "description", "runbook"} {
		if strings.TrimSpace(r.Annotations[key]) == "" {
			bad("no %s annotation", key)
		}
	}
	if rb := r.Annotations["runbook"]; rb != "" && !runbookRE.MatchString(rb) {
		bad("runbook %q: want docs/operations.md#anchor", rb)
	}
	if out == nil {
		return errs
	}
	for _, key := range slices.Sorted(maps.Keys(r.Annotations)) {
		if err := renderAnnotation(r.Annotations[key], out); err != nil {
			bad("annotation %s: %v", key, err)
		}
	}
	for k, v := range r.Labels {
		if err := renderAnnotation(v, out); err != nil {
			bad("label %s: %v", k, err)
		}
	}
	return errs
}

// alertTemplateFuncs stand in for the functions Prometheus gives alert
// templates; only their names and arities matter to the check.
var alertTemplateFuncs = template.FuncMap{
	"humanize":           func(v any) string { return fmt.Sprint(v) },
	"humanize1024":       func(v any) string { return fmt.Sprint(v) },
	"humanizeDuration":   func(v any) string { return fmt.Sprint(v) },
	"humanizePercentage": func(v any) string { return fmt.Sprint(v) },
	"humanizeTimestamp":  func(v any) string { return fmt.Sprint(v) },
	"toUpper":            strings.ToUpper,
	"toLower":            strings.ToLower,
	"title":              strings.ToTitle,
}

// renderAnnotation renders an annotation the way Prometheus does, with
// $labels holding exactly the labels the alert's expression returns: an
// annotation that names a label the expression aggregated away fails.
func renderAnnotation(text string, labels map[string]bool) error {
	const defs = "{{$labels := .Labels}}{{$externalLabels := .ExternalLabels}}{{$value := .Value}}"
	tmpl, err := template.New("annotation").Funcs(alertTemplateFuncs).Option("missingkey=error").Parse(defs + text)
	if err != nil {
		return err
	}
	values := map[string]string{}
	for l := range labels {
		values[l] = "x"
	}
	data := struct {
		Labels, ExternalLabels map[string]string
		Value                  float64
	}{values, map[string]string{}, 1.5}
	var sb strings.Builder
	if err := tmpl.Execute(&sb, data); err != nil {
		return fmt.Errorf("%w (the expression returns the labels %v)", err, slices.Sorted(maps.Keys(labels)))
	}
	return nil
}

// TestRunbooksResolve checks that each runbook anchor is a heading of
// docs/operations.md.
func TestRunbooksResolve(t *testing.T) {
	var anchors []string
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			if m := runbookRE.FindStringSubmatch(r.Annotations["runbook"]); m != nil {
				anchors = append(anchors, m[1])
			}
		}
	}
	b, err := os.ReadFile(repoRoot + "/docs/operations.md")
	if errors.Is(err, os.ErrNotExist) {
		t.Fatalf("docs/operations.md is missing; the alerts' runbooks point at its headings: %s", strings.Join(anchors, ", "))
	}
	if err != nil {
		t.Fatal(err)
	}
	headings := markdownAnchors(string(b))
	for _, a := range anchors {
		if !headings[a] {
			t.Errorf("docs/operations.md has no heading with anchor #%s", a)
		}
	}
}

// markdownAnchors returns the anchors GitHub makes of a document's
// headings: lower case, punctuation dropped, spaces to hyphens, repeats
// numbered.
func markdownAnchors(doc string) map[string]bool {
	out := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inFence = !inFence
		}
		if inFence || !strings.HasPrefix(line, "#") {
			continue
		}
		text := strings.TrimSpace(strings.TrimLeft(line, "#"))
		var sb strings.Builder
		for _, r := range strings.ToLower(text) {
			switch {
			case r == ' ':
				sb.WriteRune('-')
			case r == '-' || r == '_' || (r >= 'a' && r <= 'z') || (r >= '0' && r <= '9'):
				sb.WriteRune(r)
			}
		}
		a := sb.String()
		if n := seen[a]; n > 0 {
			out[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			out[a] = true
		}
		seen[a]++
	}
	return out
}

// TestExprChecksCatchMistakes shows what checkExpr and checkAlert refuse.
func TestExprChecksCatchMistakes(t *testing.T) {
	known := knownMetrics(t)
	tests := []struct {
		name, expr, want string
	}{
		{"not PromQL", `sum by (dataset (ingestor_consumer_records_total)`, "parse"},
		{"renamed metric", `rate(ingestor_consumer_records_consumed_total[5m])`, "not registered"},
		{"label the metric lacks", `ingestor_uploader_pending_files{reason="x"}`, `no label "reason"`},
		{"group by a label the metric lacks", `sum by (topic) (ingestor_consumer_records_total)`, "no label [topic]"},
		{"group by a label aggregated away", `sum by (reason) (sum by (dataset) (rate(ingestor_consumer_records_dropped_total[5m])))`, "no label [reason]"},
		{"on a label one side lacks", `ingestor_consumer_records_total / on (reason) ingestor_consumer_rows_written_total`, "no label [reason]"},
		{"quantile without le", `histogram_quantile(0.9, sum by (dataset) (rate(ingestor_uploader_upload_seconds_bucket[5m])))`, "no le label"},
		{"_bucket of a counter", `ingestor_consumer_records_total_bucket`, "not registered"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, errs := checkExpr(known, tt.expr)
			for _, err := range errs {
				if strings.Contains(err.Error(), tt.want) {
					return
				}
			}
			t.Fatalf("checkExpr(%s) = %v, want an error with %q", tt.expr, errs, tt.want)
		})
	}

	good := rule{
		Alert:  "IngestorExample",
		Expr:   `sum by (namespace, dataset) (rate(ingestor_uploader_upload_failures_total[5m])) > 0`,
		For:    "15m",
		Labels: map[string]string{"severity": "warning"},
		Annotations: map[string]string{
			"summary":     "{{ $labels.dataset }}: {{ $value | humanize }}",
			"description": "d",
			"runbook":     "docs/operations.md#upload-failures",
		},
	}
	if errs := checkAlert(known, good); len(errs) > 0 {
		t.Fatalf("checkAlert of a good rule: %v", errs)
	}
	alertTests := []struct {
		name   string
		break_ func(r *rule)
		want   string
	}{
		{"label aggregated away", func(r *rule) { r.Annotations["summary"] = "{{ $labels.pod }}" }, `map has no entry for key "pod"`},
		{"broken template", func(r *rule) { r.Annotations["summary"] = "{{ $labels.dataset " }, "unclosed action"},
		{"no runbook", func(r *rule) { delete(r.Annotations, "runbook") }, "no runbook"},
		{"runbook elsewhere", func(r *rule) { r.Annotations["runbook"] = "https://wiki/x" }, "want docs/operations.md#anchor"},
		{"no summary", func(r *rule) { delete(r.Annotations, "summary") }, "no summary"},
		{"bad for", func(r *rule) { r.For = "15 minutes" }, "for:"},
		{"unknown severity", func(r *rule) { r.Labels["severity"] = "page" }, "severity"},
	}
	for _, tt := range alertTests {
		t.Run(tt.name, func(t *testing.T) {
			r := good
			r.Labels = maps.Clone(good.Labels)
			r.Annotations = maps.Clone(good.Annotations)
			tt.break_(&r)
			for _, err := range checkAlert(known, r) {
				if strings.Contains(err.Error(), tt.want) {
					return
				}
			}
			t.Fatalf("checkAlert found %v, want an error with %q", checkAlert(known, r), tt.want)
		})
	}
}

// dashboard is the part of a Grafana dashboard model the tests read.
type dashboard struct {
	UID           string  `json:"uid"`
	Title         string  `json:"title"`
	SchemaVersion int     `json:"schemaVersion"`
	Panels        []panel `json:"panels"`
	Templating    struct {
		List []variable `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int            `json:"id"`
	Type       string         `json:"type"`
	Title      string         `json:"title"`
	GridPos    gridPos        `json:"gridPos"`
	Datasource *datasourceRef `json:"datasource"`
	Targets    []target       `json:"targets"`
	Panels     []panel        `json:"panels"`
}

type gridPos struct {
	H, W, X, Y int
}

type datasourceRef struct {
	Type string `json:"type"`
	UID  string `json:"uid"`
}

type target struct {
	RefID        string         `json:"refId"`
	Expr         string         `json:"expr"`
	LegendFormat string         `json:"legendFormat"`
	Datasource   *datasourceRef `json:"datasource"`
}

type variable struct {
	Name       string          `json:"name"`
	Type       string          `json:"type"`
	Query      json.RawMessage `json:"query"`
	Datasource *datasourceRef  `json:"datasource"`
}

// grafanaBuiltins are the variables Grafana defines itself, with a value
// to put in their place before parsing.
var grafanaBuiltins = map[string]string{
	"__rate_interval": "5m",
	"__interval":      "1m",
	"__range":         "1h",
}

var (
	grafanaVarRE = regexp.MustCompile(`\$\{(\w+)(?::\w+)?\}|\$(\w+)`)
	legendRE     = regexp.MustCompile(`\{\{\s*(\w+)\s*\}\}`)
	labelValues  = regexp.MustCompile(`^label_values\((.*),\s*(\w+)\)$`)
)

// substituteVariables puts a value in place of each Grafana variable of
// expr, as Grafana does before it sends the query, and reports the
// variables that the dashboard does not define.
func substituteVariables(expr string, defined map[string]bool) (string, []string) {
	var undefined []string
	out := grafanaVarRE.ReplaceAllStringFunc(expr, func(m string) string {
		sub := grafanaVarRE.FindStringSubmatch(m)
		name := sub[1] + sub[2]
		if v, ok := grafanaBuiltins[name]; ok {
			return v
		}
		if !defined[name] {
			undefined = append(undefined, name)
		}
		return ".*" // every custom variable here is multi-valued, used as a regex
	})
	return out, undefined
}

// TestDashboard checks the Grafana dashboard: it loads, its layout fits,
// and every query parses and names only registered metrics and labels.
func TestDashboard(t *testing.T) {
	known := knownMetrics(t)
	b, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("dashboard: uid %q, title %q, schemaVersion %d: want all three", d.UID, d.Title, d.SchemaVersion)
	}

	defined := map[string]bool{}
	var dsVar string
	for _, v := range d.Templating.List {
		defined[v.Name] = true
		if v.Type == "datasource" {
			dsVar = v.Name
			var q string
			if json.Unmarshal(v.Query, &q) != nil || q != "prometheus" {
				t.Errorf("variable %s: want a prometheus data source", v.Name)
			}
		}
	}
	if dsVar == "" {
		t.Fatalf("dashboard: no data source variable; the dashboard would be bound to one Prometheus")
	}
	wantDS := "${" + dsVar + "}"
	for _, v := range d.Templating.List {
		if v.Type != "query" {
			continue
		}
		var q struct {
			Query string `json:"query"`
		}
		if err := json.Unmarshal(v.Query, &q); err != nil {
			t.Errorf("variable %s: query: %v", v.Name, err)
			continue
		}
		m := labelValues.FindStringSubmatch(q.Query)
		if m == nil {
			t.Errorf("variable %s: query %q: want label_values(selector, label)", v.Name, q.Query)
			continue
		}
		expr, undefined := substituteVariables(m[1], defined)
		if len(undefined) > 0 {
			t.Errorf("variable %s: uses undefined variables %v", v.Name, undefined)
		}
		out, errs := checkExpr(known, expr)
		for _, err := range errs {
			t.Errorf("variable %s: %v", v.Name, err)
		}
		if out != nil && !out[m[2]] {
			t.Errorf("variable %s: %s has no label %s", v.Name, m[1], m[2])
		}
		if v.Datasource == nil || v.Datasource.UID != wantDS {
			t.Errorf("variable %s: data source %v, want %s", v.Name, v.Datasource, wantDS)
		}
	}

	ids := map[int]string{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			where := fmt.Sprintf("panel %d %q", p.ID, p.Title)
			if other, dup := ids[p.ID]; dup || p.ID == 0 {
				t.Errorf("%s: id repeats %q or is 0", where, other)
			}
			ids[p.ID] = p.Title
			g := p.GridPos
			if g.W < 1 || g.H < 1 || g.X < 0 || g.X+g.W > 24 {
				t.Errorf("%s: gridPos %+v does not fit the 24-column grid", where, g)
			}
			if p.Type == "row" {
				walk(p.Panels)
				continue
			}
			if p.Title == "" {
				t.Errorf("%s: no title", where)
			}
			if p.Datasource == nil || p.Datasource.UID != wantDS {
				t.Errorf("%s: data source %v, want %s", where, p.Datasource, wantDS)
			}
			if len(p.Targets) == 0 {
				t.Errorf("%s: no query", where)
			}
			refs := map[string]bool{}
			for _, tg := range p.Targets {
				if tg.RefID == "" || refs[tg.RefID] {
					t.Errorf("%s: refId %q empty or repeated", where, tg.RefID)
				}
				refs[tg.RefID] = true
				expr, undefined := substituteVariables(tg.Expr, defined)
				if len(undefined) > 0 {
					t.Errorf("%s: query %s uses undefined variables %v", where, tg.RefID, undefined)
				}
				out, errs := checkExpr(known, expr)
				for _, err := range errs {
					t.Errorf("%s: query %s: %v", where, tg.RefID, err)
				}
				for _, m := range legendRE.FindAllStringSubmatch(tg.LegendFormat, -1) {
					if out != nil && !out[m[1]] {
						t.Errorf("%s: legend {{%s}}: the query returns no such label (%v)", where, m[1], slices.Sorted(maps.Keys(out)))
					}
				}
			}
		}
	}
	walk(d.Panels)

	// What an alert fires on is on the dashboard too, so that the person
	// paged can see it.
	onDashboard := dashboardMetrics(t, d, defined)
	for _, g := range readAlerts(t).Groups {
		for _, r := range g.Rules {
			for _, name := range exprMetrics(t, r.Expr) {
				if !onDashboard[name] {
					t.Errorf("alert %s uses %s, which no dashboard panel shows", r.Alert, name)
				}
			}
		}
	}
}

// exprMetrics lists the metric names an expression selects.
func exprMetrics(t *testing.T, expr string) []string {
	t.Helper()
	e, err := promparser.NewParser(promparser.Options{}).ParseExpr(expr)
	if err != nil {
		t.Fatalf("parse %s: %v", expr, err)
	}
	var names []string
	promparser.Inspect(e, func(n promparser.Node, _ []promparser.Node) error {
		if vs, ok := n.(*promparser.VectorSelector); ok {
			names = append(names, vs.Name)
		}
		return nil
	})
	return names
}

func dashboardMetrics(t *testing.T, d dashboard, defined map[string]bool) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	var walk func(ps []panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			walk(p.Panels)
			for _, tg := range p.Targets {
				expr, _ := substituteVariables(tg.Expr, defined)
				for _, n := range exprMetrics(t, expr) {
					out[n] = true
				}
			}
		}
	}
	walk(d.Panels)
	return out
}

// TestMetricNamesFollowTheConvention checks the names the code registers,
// since the dashboard and alerts are written against that convention:
// ingestor_<role>_<noun>_<unit>, _total on counters only.
func TestMetricNamesFollowTheConvention(t *testing.T) {
	roles := []string{"supervisor", "consumer", "uploader", "committer", "maintainer", "process"}
	n := 0
	for name, info := range registeredMetrics(t) {
		if !strings.HasPrefix(name, "ingestor_") {
			continue
		}
		n++
		rest := strings.TrimPrefix(name, "ingestor_")
		if !slices.ContainsFunc(roles, func(r string) bool { return strings.HasPrefix(rest, r+"_") }) {
			t.Errorf("%s (%s): want ingestor_<role>_..., role one of %v", name, info.where, roles)
		}
		if (info.kind == "counter") != strings.HasSuffix(name, "_total") {
			t.Errorf("%s (%s): a %s; _total belongs to counters, and every counter has it", name, info.where, info.kind)
		}
	}
	if n < 10 {
		t.Fatalf("found only %d ingestor_ metrics in the Go sources: is the scan broken?", n)
	}
}
