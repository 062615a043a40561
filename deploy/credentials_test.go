package deploy

import (
	"fmt"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	"github.com/jackc/pgx/v5/pgconn"
	yamlv3 "gopkg.in/yaml.v3"

	"github.com/icewal/ingestor/shared/config"
)

// secretRefRE is a whole value that refers to a secret kept elsewhere, as
// shared/config resolves it.
var secretRefRE = regexp.MustCompile(`^\$\{(env|file):[^}]+\}$`)

// secretKeyWords mark a key whose value is a credential.
var secretKeyWords = []string{"password", "token", "secret", "key", "credential"}

// secretKeyPrefixes mark keys that hold a credential whatever follows.
var secretKeyPrefixes = []string{"adls.sas-token.", "adls.connection-string."}

var dsnPasswordRE = regexp.MustCompile(`(?i)\bpassword\s*=\s*(\S+)`)

// credentialsIn returns the keys of a configuration document that hold a
// credential written out, rather than a ${env:...} or ${file:...}
// reference to one.
func credentialsIn(doc string) ([]string, error) {
	var root any
	if err := yamlv3.Unmarshal([]byte(doc), &root); err != nil {
		return nil, err
	}
	var found []string
	var walk func(path string, v any)
	walk = func(path string, v any) {
		switch n := v.(type) {
		case map[string]any:
			for k, child := range n {
				p := k
				if path != "" {
					p = path + "." + k
				}
				walk(p, child)
			}
		case []any:
			for i, child := range n {
				walk(fmt.Sprintf("%s[%d]", path, i), child)
			}
		case string:
			if secretRefRE.MatchString(n) || n == "" {
				return
			}
			last := strings.ToLower(path[strings.LastIndex(path, ".")+1:])
			secret := slices.ContainsFunc(secretKeyWords, func(w string) bool { return strings.Contains(last, w) })
			secret = secret || slices.ContainsFunc(secretKeyPrefixes, func(p string) bool { return strings.Contains(path, p) })
			if u, err := url.Parse(n); err == nil && u.User != nil {
				if pw, has := u.User.Password(); has && !secretRefRE.MatchString(pw) {
					secret = true
				}
			}
			if m := dsnPasswordRE.FindStringSubmatch(n); m != nil && !secretRefRE.MatchString(m[1]) {
				secret = true
			}
			if secret {
				found = append(found, path)
			}
		}
	}
	walk("", root)
	slices.Sort(found)
	return found, nil
}

// TestConfigMapHoldsNoCredential checks that the configuration, which
// every reader of the namespace's ConfigMaps can see, carries no
// credential, only references to the environment.
func TestConfigMapHoldsNoCredential(t *testing.T) {
	for _, name := range layouts {
		l := loadLayout(t, name)
		for cmName, cm := range l.configMaps {
			for key, doc := range cm.Data {
				found, err := credentialsIn(doc)
				if err != nil {
					t.Errorf("ConfigMap %s key %s: %v", cmName, key, err)
				}
				for _, k := range found {
					t.Errorf("layout %s: ConfigMap %s key %s: %s holds a credential; refer to it as ${env:NAME} and set NAME from a Secret", name, cmName, key, k)
				}
			}
		}
	}
	// The check finds what it looks for, and lets references through.
	tests := []struct {
		doc  string
		want []string
	}{
		{"catalog: {adls.auth.shared-key.account.name: acct, adls.auth.shared-key.account.key: c2VjcmV0}", []string{"catalog.adls.auth.shared-key.account.key"}},
		{"catalog: {adls.sas-token.acct.dfs.core.windows.net: 'sv=2024&sig=x'}", []string{"catalog.adls.sas-token.acct.dfs.core.windows.net"}},
		{"catalog: {token: t, credential: 'id:secret'}", []string{"catalog.credential", "catalog.token"}},
		{"catalog: {uri: 'postgres://u:pw@db/iceberg'}", []string{"catalog.uri"}},
		{"catalog: {uri: 'host=db user=u password=pw dbname=iceberg'}", []string{"catalog.uri"}},
		{"kafka: {sasl: {username: u, password: hunter2}}", []string{"kafka.sasl.password"}},
		{"kafka: {sasl: {username: u, password: '${env:P}'}}", nil},
		{"catalog: {uri: 'postgres://u:${env:P}@db/iceberg', token: '${file:/run/t}'}", nil},
	}
	for _, tt := range tests {
		got, err := credentialsIn(tt.doc)
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("credentialsIn(%s) = %v, %v; want %v", tt.doc, got, err, tt.want)
		}
	}
}

// TestCredentialsReachLibraries sets each container's environment from the
// Secret the way the kubelet does, and checks that each credential arrives
// where it is used: the Kafka password through the configuration's
// ${env:...} reference, the catalog's password through pgx's PGPASSWORD,
// and the service principal through DefaultAzureCredential's variables.
func TestCredentialsReachLibraries(t *testing.T) {
	for _, name := range layouts {
		t.Run(name, func(t *testing.T) {
			l := loadLayout(t, name)
			for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
				t.Run(c.Name, func(t *testing.T) {
					cfg, err := l.ingestorConfig(c)
					if err != nil {
						t.Fatal(err)
					}
					env, err := l.containerEnv(c)
					if err != nil {
						t.Fatal(err)
					}
					for _, k := range credentialVars {
						t.Setenv(k, "")
					}
					for k, v := range env {
						t.Setenv(k, v)
					}

					if s := cfg.Kafka.SASL; s != nil {
						if want := env["KAFKA_SASL_PASSWORD"]; want == "" || s.Password != want {
							t.Errorf("kafka.sasl.password is %q after parsing, want the Secret's KAFKA_SASL_PASSWORD %q", s.Password, want)
						}
					}
					if cfg.Catalog.Properties["sql.driver"] == "pgx" {
						pc, err := pgconn.ParseConfig(cfg.Catalog.Properties["uri"])
						if err != nil {
							t.Fatalf("parse catalog uri: %v", err)
						}
						if want := env["PGPASSWORD"]; want == "" || pc.Password != want {
							t.Errorf("pgx reads password %q from the environment, want the Secret's PGPASSWORD %q", pc.Password, want)
						}
					}
					if azureWithoutCredential(cfg) {
						// The ingestor and iceberg-go fall back to
						// DefaultAzureCredential, whose first source is the
						// environment.
						if _, err := azidentity.NewEnvironmentCredential(nil); err != nil {
							t.Errorf("azidentity finds no credential in the container's environment: %v", err)
						}
					}
				})
			}
		})
	}
}

// azureWithoutCredential tells whether the warehouse is on Azure and the
// catalog properties name no adls.* credential.
func azureWithoutCredential(cfg *config.Config) bool {
	wh := cfg.Catalog.Properties["warehouse"]
	if !strings.HasPrefix(wh, "abfs") && !strings.HasPrefix(wh, "wasb") {
		return false
	}
	for k := range cfg.Catalog.Properties {
		if strings.HasPrefix(k, "adls.auth.") || strings.HasPrefix(k, "adls.sas-token.") || strings.HasPrefix(k, "adls.connection-string.") {
			return false
		}
	}
	return true
}

// TestCredentialsNeedTheSecret shows that the checks above depend on the
// environment: without the Secret's variables the configuration does not
// load and neither library finds its credential.
func TestCredentialsNeedTheSecret(t *testing.T) {
	for _, k := range append(credentialVars, "AZURE_CLIENT_CERTIFICATE_PATH", "AZURE_USERNAME") {
		t.Setenv(k, "")
	}
	t.Setenv("PGPASSFILE", t.TempDir()+"/none")
	if _, err := azidentity.NewEnvironmentCredential(nil); err == nil {
		t.Error("azidentity found a credential in an empty environment")
	}
	l := loadLayout(t, layouts[0])
	c := l.statefulSet.Spec.Template.Spec.Containers[0]
	c.Env = nil
	if _, err := l.ingestorConfig(c); err == nil || !strings.Contains(err.Error(), "KAFKA_SASL_PASSWORD") {
		t.Errorf("the configuration loaded without KAFKA_SASL_PASSWORD: %v", err)
	}
	cfg, err := l.ingestorConfig(l.statefulSet.Spec.Template.Spec.Containers[0])
	if err != nil {
		t.Fatal(err)
	}
	pc, err := pgconn.ParseConfig(cfg.Catalog.Properties["uri"])
	if err != nil {
		t.Fatal(err)
	}
	if pc.Password != "" {
		t.Errorf("pgx found password %q without PGPASSWORD", pc.Password)
	}
}

// TestSecretKeysAreUsed checks that every key of the Secret reaches some
// container: a key nothing reads is a credential the user fills in for
// nothing.
func TestSecretKeysAreUsed(t *testing.T) {
	for _, name := range layouts {
		l := loadLayout(t, name)
		used := map[string]bool{}
		for _, c := range containers(&l.statefulSet.Spec.Template.Spec) {
			for _, e := range c.Env {
				if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
					used[e.ValueFrom.SecretKeyRef.Name+"/"+e.ValueFrom.SecretKeyRef.Key] = true
				}
			}
		}
		for sname, s := range l.secrets {
			keys := slices.Collect(func(yield func(string) bool) {
				for k := range s.StringData {
					if !yield(k) {
						return
					}
				}
				for k := range s.Data {
					if !yield(k) {
						return
					}
				}
			})
			for _, k := range keys {
				if !used[sname+"/"+k] {
					t.Errorf("layout %s: key %s of Secret %s reaches no container", name, k, sname)
				}
			}
		}
	}
}
