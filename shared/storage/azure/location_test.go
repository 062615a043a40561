package azure

import "testing"

func TestServiceURL(t *testing.T) {
	cases := []struct {
		name     string
		location string
		props    map[string]string
		want     string
		wantPath string
	}{
		{"abfss on azure", "abfss://wh@acct.dfs.core.windows.net/db/t/data/x.parquet", nil, "https://acct.blob.core.windows.net", "db/t/data/x.parquet"},
		{"wasbs on azure", "wasbs://wh@acct.blob.core.windows.net/x", nil, "https://acct.blob.core.windows.net", "x"},
		{"sovereign cloud", "abfss://wh@acct.dfs.core.chinacloudapi.cn/x", nil, "https://acct.blob.core.chinacloudapi.cn", "x"},
		{"bare account host", "abfs://wh@acct/x", nil, "https://acct.blob.core.windows.net", "x"},
		{"azurite", "abfs://wh@devstoreaccount1.dfs.core.windows.net/a/b", map[string]string{"adls.endpoint": "127.0.0.1:10000", "adls.protocol": "http"}, "http://127.0.0.1:10000/devstoreaccount1", "a/b"},
		{"localhost", "abfs://wh@dev.dfs.core.windows.net/a", map[string]string{"adls.endpoint": "localhost:10000", "adls.protocol": "http"}, "http://localhost:10000/dev", "a"},
		{"custom domain", "abfs://wh@acct.dfs.core.windows.net/a", map[string]string{"adls.endpoint": "blob.example.net"}, "https://acct.blob.example.net", "a"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			l, err := ParseLocation(c.location)
			if err != nil {
				t.Fatal(err)
			}
			got, err := serviceURL(l, c.props)
			if err != nil {
				t.Fatal(err)
			}
			if got != c.want || l.Path != c.wantPath || l.Container != "wh" {
				t.Fatalf("service %q path %q container %q; want %q, %q, wh", got, l.Path, l.Container, c.want, c.wantPath)
			}
		})
	}
}

func TestParseLocationErrors(t *testing.T) {
	for _, loc := range []string{
		"abfs://acct.dfs.core.windows.net/x",  // no container
		"abfs://wh@acct.dfs.core.windows.net", // no path
		"abfs://wh@acct.dfs.core.windows.net/dir/",
		"s3://wh@acct/x",
		"abfs://wh@/x",
	} {
		if _, err := ParseLocation(loc); err == nil {
			t.Errorf("ParseLocation(%q) succeeded", loc)
		}
	}
	if _, err := serviceURL(Location{Account: "a", Host: "a.blob.core.windows.net"}, map[string]string{"adls.protocol": "ftp"}); err == nil {
		t.Error("protocol ftp accepted")
	}
}
